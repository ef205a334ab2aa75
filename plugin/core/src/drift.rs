//! Drift diff and classification (SPEC section 5).

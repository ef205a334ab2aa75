//! Unusable input: a file that cannot be read or parsed, a bad flag, a configuration the
//! plugin refuses. The command exits with status 2 for these (and 1 when a replay or an
//! expectation did not hold), so CI can tell "fix your invocation" from "the policy broke".

/// An input the command cannot use; the text says which and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(pub String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Builds an `anyhow` error holding an [`InputError`].
pub fn input_error(message: impl Into<String>) -> anyhow::Error {
    InputError(message.into()).into()
}

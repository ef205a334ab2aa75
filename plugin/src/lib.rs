//! toolseal's proxy-wasm adapter for Envoy.

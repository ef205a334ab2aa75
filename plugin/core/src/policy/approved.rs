//! Approved (and candidate) tool sets, parsed once per worker and cached by fingerprint.
//!
//! Main design decision: a fingerprint names exactly one tool set (a set is only ever built
//! from definitions that hash to its fingerprint), so the parsed form, its digests and the
//! compiled input schemas can be cached by fingerprint without invalidation, even after the
//! store has reused the set's slot; the cache is bounded and evicts whole entries.

use crate::policy::fingerprint::{FingerprintFields, ToolDigests, digest_tools};
use crate::policy::schema::{CompiledSchema, SchemaError, compile};
use crate::state::store::StateStore;
use crate::state::{self, StateError};
use serde_json::Value;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// How many tool sets one worker keeps parsed.
pub const CACHE_ENTRIES: usize = 32;

/// One tool of an approved set.
#[derive(Debug)]
pub struct ApprovedTool {
    /// The definition as the server advertised it.
    pub definition: Value,
    /// Its digest.
    pub digest: String,
    input: OnceCell<Result<CompiledSchema, SchemaError>>,
    output: OnceCell<Option<Result<CompiledSchema, SchemaError>>>,
}

impl ApprovedTool {
    /// The compiled `inputSchema` (compiled on first use). A missing schema accepts an
    /// object of any shape.
    pub fn input_schema(&self) -> &Result<CompiledSchema, SchemaError> {
        self.input.get_or_init(|| {
            let schema = self
                .definition
                .get("inputSchema")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            compile(&schema)
        })
    }

    /// The compiled `outputSchema`, when the tool has one.
    pub fn output_schema(&self) -> Option<&Result<CompiledSchema, SchemaError>> {
        self.output
            .get_or_init(|| self.definition.get("outputSchema").map(compile))
            .as_ref()
    }

    /// The tool's `annotations`.
    pub fn annotations(&self) -> Option<&Value> {
        self.definition.get("annotations")
    }
}

/// A stored tool set.
#[derive(Debug)]
pub struct Approved {
    /// Its fingerprint.
    pub fingerprint: String,
    /// Tools by name.
    pub tools: BTreeMap<String, ApprovedTool>,
}

impl Approved {
    /// Builds from definitions; `None` when they do not form a valid set.
    pub fn from_definitions(
        fingerprint: &str,
        definitions: Vec<Value>,
        fields: &FingerprintFields,
    ) -> Option<Approved> {
        let array = Value::Array(definitions);
        let digests = digest_tools(&array, fields).ok()?;
        if digests.fingerprint() != fingerprint {
            return None;
        }
        let Value::Array(definitions) = array else {
            return None;
        };
        let mut tools = BTreeMap::new();
        for definition in definitions {
            let name = definition.get("name")?.as_str()?.to_string();
            let digest = digests.get(&name)?.to_string();
            tools.insert(
                name,
                ApprovedTool {
                    definition,
                    digest,
                    input: OnceCell::new(),
                    output: OnceCell::new(),
                },
            );
        }
        Some(Approved {
            fingerprint: fingerprint.to_string(),
            tools,
        })
    }

    /// The digest of a tool, if the set has it.
    pub fn digest(&self, name: &str) -> Option<&str> {
        self.tools.get(name).map(|t| t.digest.as_str())
    }

    /// The set's digests, as [`digest_tools`] computes them from its definitions.
    pub fn digests(&self) -> Option<ToolDigests> {
        let entries = self
            .tools
            .iter()
            .map(|(name, tool)| (name.clone(), tool.digest.clone()))
            .collect();
        ToolDigests::from_entries(entries).ok()
    }

    /// Every definition, in name order.
    pub fn definitions(&self) -> Vec<Value> {
        self.tools.values().map(|t| t.definition.clone()).collect()
    }
}

/// The per-worker cache.
#[derive(Debug, Default)]
pub struct ApprovedCache {
    entries: BTreeMap<String, Rc<Approved>>,
}

impl ApprovedCache {
    /// The set of `fingerprint` among `server`'s stored sets, loaded from the store on first
    /// use. `Ok(None)`: not stored (or its slot was reused), or the stored definitions do not
    /// hash to `fingerprint`; an error: the store could not be read.
    pub fn get_or_load(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        fingerprint: &str,
        fields: &FingerprintFields,
    ) -> Result<Option<Rc<Approved>>, StateError> {
        if let Some(hit) = self.entries.get(fingerprint) {
            return Ok(Some(Rc::clone(hit)));
        }
        let Some(definitions) = state::get_tool_set(store, server, fingerprint)? else {
            return Ok(None);
        };
        let Some(approved) = Approved::from_definitions(fingerprint, definitions, fields) else {
            return Ok(None);
        };
        let approved = Rc::new(approved);
        if self.entries.len() >= CACHE_ENTRIES {
            self.entries.clear();
        }
        self.entries
            .insert(fingerprint.to_string(), Rc::clone(&approved));
        Ok(Some(approved))
    }

    /// Whether the set stored under `fingerprint` is cached (then it is in the store too:
    /// entries come from the store or are added after a successful store write).
    pub fn contains(&self, fingerprint: &str) -> bool {
        self.entries.contains_key(fingerprint)
    }

    /// Adds a set just built from a live list (avoids a store round trip).
    pub fn insert(&mut self, approved: Approved) -> Rc<Approved> {
        if self.entries.len() >= CACHE_ENTRIES {
            self.entries.clear();
        }
        let rc = Rc::new(approved);
        self.entries.insert(rc.fingerprint.clone(), Rc::clone(&rc));
        rc
    }
}

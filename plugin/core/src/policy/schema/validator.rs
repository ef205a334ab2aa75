//! Walks a compiled schema over an instance and collects violations.
//!
//! Fail closed is decided in one place, [`validate`]: a validation that was aborted (work
//! budget spent, schema recursion too deep) is invalid whatever the partial result says,
//! because an abort inside `not` or `anyOf` could otherwise turn into a pass. Subschemas of
//! `anyOf`/`oneOf`/`not`/`if`/`contains` are probed (stop at their first violation); the
//! rest report directly with their own instance paths.

mod applicators;
mod containers;

use super::Violation;
use super::json_value::{self, MAX_VALUE_DEPTH, json_eq};
use super::keywords::{Bound, Check, Node, NodeId, Pattern, TypeSet};

use super::number;
use serde_json::{Number, Value};
use std::cmp::Ordering;

/// Deepest chain of subschema applications (bounds `$ref` recursion).
const MAX_DIVE: usize = 256;
/// Work units (schema nodes visited, regex steps, items compared) any validation may use...
const WORK_BUDGET_BASE: u64 = 1_000_000;
/// ...plus this many per unit of instance size (values and string bytes), so that the cap
/// grows linearly with the request, never with the schema.
const WORK_PER_SIZE_UNIT: u64 = 16;
/// Most names or values listed in one message.
const MAX_LISTED: usize = 12;

/// Validates `instance` against the schema whose root is node 0 of `nodes`.
pub(crate) fn validate(
    nodes: &[Node],
    instance: &Value,
    limit: usize,
) -> Result<(), Vec<Violation>> {
    let extent = json_value::measure(instance, MAX_VALUE_DEPTH);
    if extent.depth > MAX_VALUE_DEPTH {
        return Err(vec![Violation {
            instance_path: String::new(),
            message: format!("value nests deeper than {MAX_VALUE_DEPTH} levels; flatten it"),
        }]);
    }
    let mut walker = Walker {
        nodes,
        violations: Vec::new(),
        limit: limit.max(1),
        budget: WORK_PER_SIZE_UNIT
            .saturating_mul(extent.size)
            .saturating_add(WORK_BUDGET_BASE),
        aborted: None,
    };
    let valid = walker.check(0, instance, &mut Vec::new(), 0);
    if let Some(abort) = walker.aborted {
        return Err(vec![abort]);
    }
    if valid {
        return Ok(());
    }
    if walker.violations.is_empty() {
        walker.violations.push(Violation {
            instance_path: String::new(),
            message: "value does not match the schema".to_owned(),
        });
    }
    Err(walker.violations)
}

/// One step of an instance path.
#[derive(Debug, Clone, Copy)]
enum Seg<'i> {
    Key(&'i str),
    Index(usize),
}

type Path<'i> = Vec<Seg<'i>>;

/// The JSON pointer of `path`. A key longer than [`MAX_KEY_SHOWN`] is cut (marked `…`),
/// so that a hostile key cannot blow up messages and audit records.
fn pointer(path: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                out.push('/');
                out.push_str(&short(k).replace('~', "~0").replace('/', "~1"));
            }
            Seg::Index(i) => {
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }
    out
}

/// Longest instance key shown in a path or message.
const MAX_KEY_SHOWN: usize = 128;

/// `key`, cut at [`MAX_KEY_SHOWN`] characters.
fn short(key: &str) -> std::borrow::Cow<'_, str> {
    match key.char_indices().nth(MAX_KEY_SHOWN) {
        None => std::borrow::Cow::Borrowed(key),
        Some((cut, _)) => {
            std::borrow::Cow::Owned(format!("{}…", key.get(..cut).unwrap_or_default()))
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn list<T: AsRef<str>>(items: impl IntoIterator<Item = T>) -> String {
    let mut names: Vec<String> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        if i == MAX_LISTED {
            names.push("…".to_owned());
            break;
        }
        names.push(item.as_ref().to_owned());
    }
    names.join(", ")
}

struct Walker<'s> {
    nodes: &'s [Node],
    violations: Vec<Violation>,
    limit: usize,
    budget: u64,
    aborted: Option<Violation>,
}

impl<'s> Walker<'s> {
    fn fail(&mut self, path: &[Seg<'_>], message: String) -> bool {
        if self.violations.len() < self.limit {
            self.violations.push(Violation {
                instance_path: pointer(path),
                message,
            });
        }
        false
    }

    fn abort(&mut self, path: &[Seg<'_>], message: String) -> bool {
        if self.aborted.is_none() {
            self.aborted = Some(Violation {
                instance_path: pointer(path),
                message,
            });
        }
        false
    }

    fn full(&self) -> bool {
        self.aborted.is_some() || self.violations.len() >= self.limit
    }

    fn spend(&mut self, units: u64, path: &[Seg<'_>]) -> bool {
        match self.budget.checked_sub(units) {
            Some(left) => {
                self.budget = left;
                true
            }
            None => self.abort(path, budget_message()),
        }
    }

    fn check<'i>(&mut self, id: NodeId, inst: &'i Value, path: &mut Path<'i>, dive: usize) -> bool {
        if self.aborted.is_some() {
            return false;
        }
        if dive > MAX_DIVE {
            let msg = format!("schema recursion deeper than {MAX_DIVE} levels; value refused");
            return self.abort(path, msg);
        }
        if !self.spend(1, path) {
            return false;
        }
        let nodes = self.nodes;
        match nodes.get(id) {
            Some(Node::Bool(true)) => true,
            Some(Node::Bool(false)) => self.fail(path, "no value is allowed here".to_owned()),
            Some(Node::Checks(checks)) => {
                let mut valid = true;
                for check in checks {
                    if !self.keyword(check, inst, path, dive) {
                        valid = false;
                        if self.full() {
                            break;
                        }
                    }
                }
                valid
            }
            None => self.abort(path, "internal error: dangling schema node".to_owned()),
        }
    }

    /// Runs `id` on `inst` without reporting: whether it holds, and its first violation.
    fn probe<'i>(
        &mut self,
        id: NodeId,
        inst: &'i Value,
        path: &mut Path<'i>,
        dive: usize,
    ) -> (bool, Option<Violation>) {
        let saved = std::mem::take(&mut self.violations);
        let saved_limit = std::mem::replace(&mut self.limit, 1);
        let valid = self.check(id, inst, path, dive + 1);
        let first = self.violations.pop();
        self.violations = saved;
        self.limit = saved_limit;
        (valid, first)
    }

    fn keyword<'i>(
        &mut self,
        check: &'s Check,
        inst: &'i Value,
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        match check {
            Check::Type(set) => self.check_type(*set, inst, path),
            Check::Enum(values) => self.check_enum(values, inst, path),
            Check::Const(expected) => {
                json_eq(expected, inst)
                    || self.fail(
                        path,
                        format!("value must be {}", json_value::preview(expected, 80)),
                    )
            }
            Check::AllOf(_)
            | Check::AnyOf(_)
            | Check::OneOf(_)
            | Check::Not(_)
            | Check::IfThenElse { .. }
            | Check::Ref(_) => self.applicator(check, inst, path, dive),
            _ => match inst {
                Value::Number(n) => self.number_keyword(check, n, path),
                Value::String(s) => self.string_keyword(check, s, path),
                Value::Array(items) => self.array_keyword(check, items, path, dive),
                Value::Object(map) => self.object_keyword(check, inst, map, path, dive),
                Value::Null | Value::Bool(_) => true,
            },
        }
    }

    fn check_type(&mut self, set: TypeSet, inst: &Value, path: &[Seg<'_>]) -> bool {
        let ok = match inst {
            Value::Number(n) => set.has("number") || (set.has("integer") && number::is_integer(n)),
            other => set.has(type_name(other)),
        };
        ok || self.fail(
            path,
            format!(
                "expected {}, got {}",
                set.names().join(" or "),
                type_name(inst)
            ),
        )
    }

    fn check_enum(&mut self, values: &[Value], inst: &Value, path: &[Seg<'_>]) -> bool {
        if !self.spend(values.len() as u64, path) {
            return false;
        }
        if values.iter().any(|v| json_eq(v, inst)) {
            return true;
        }
        let allowed = list(values.iter().map(|v| json_value::preview(v, 60)));
        let got = json_value::preview(inst, 60);
        self.fail(
            path,
            format!("value {got} is not one of the allowed values: {allowed}"),
        )
    }

    fn number_keyword(&mut self, check: &Check, n: &Number, path: &[Seg<'_>]) -> bool {
        match check {
            Check::Minimum(b) => self.check_bound(b, n, Ordering::Less, path),
            Check::Maximum(b) => self.check_bound(b, n, Ordering::Greater, path),
            Check::MultipleOf(m) => {
                number::is_multiple_of(n, m)
                    || self.fail(path, format!("{n} is not a multiple of {m}"))
            }
            _ => true,
        }
    }

    /// `bad` is the ordering of value vs limit that violates the bound.
    fn check_bound(&mut self, b: &Bound, n: &Number, bad: Ordering, path: &[Seg<'_>]) -> bool {
        let ord = number::compare(n, &b.limit);
        let ok = match ord {
            Some(Ordering::Equal) => !b.exclusive,
            Some(o) => o != bad,
            None => false,
        };
        if ok {
            return true;
        }
        let relation = match (bad, b.exclusive) {
            (Ordering::Less, false) => ">=",
            (Ordering::Less, true) => ">",
            (_, false) => "<=",
            (_, true) => "<",
        };
        self.fail(
            path,
            format!("value must be {relation} {}, got {n}", b.limit),
        )
    }

    fn string_keyword(&mut self, check: &'s Check, s: &str, path: &[Seg<'_>]) -> bool {
        match check {
            Check::MinLength(min) => {
                let len = s.chars().count() as u64;
                len >= *min
                    || self.fail(
                        path,
                        format!("string has {len} characters; at least {min} are required"),
                    )
            }
            Check::MaxLength(max) => {
                let len = s.chars().count() as u64;
                len <= *max
                    || self.fail(
                        path,
                        format!("string has {len} characters; at most {max} are allowed"),
                    )
            }
            Check::Pattern(p) => match self.search(p, s, path) {
                Some(true) => true,
                Some(false) => self.fail(
                    path,
                    format!("string does not match the pattern {:?}", p.source),
                ),
                None => false,
            },
            _ => true,
        }
    }

    /// Runs a regex search on the shared budget; `None` when it was aborted.
    fn search(&mut self, p: &'s Pattern, text: &str, path: &[Seg<'_>]) -> Option<bool> {
        match p.regex.is_match(text, &mut self.budget) {
            Ok(found) => Some(found),
            Err(_) => {
                let msg = format!(
                    "checking the pattern {:?} on this value exceeded the work budget; \
                     shorten the value",
                    p.source
                );
                self.abort(path, msg);
                None
            }
        }
    }
}

fn budget_message() -> String {
    "the value is too large or complex to check within the work budget; send a smaller value"
        .to_owned()
}

//! Reading and validating the `policy` config object.
//!
//! Main design decision: validation happens once, at config load, and every error names the
//! bad field with its full path (`policy.rules[2].arguments./region: unknown predicate
//! "foo"`), so the operator knows what to fix without reading code; unknown keys are refused.

use super::{
    Action, ArgumentCondition, Policy, Predicate, Principal, PrincipalSource, Rule, UseKind, quote,
};
use serde_json::{Map, Value};

/// Reads the whole `policy` object.
pub(super) fn policy(value: &Value) -> Result<Policy, String> {
    let obj = as_object(value, "policy")?;
    refuse_unknown(obj, "policy", &["default", "rules"], "key")?;
    let default = match obj.get("default") {
        None => Action::Allow,
        Some(v) => parse_action(v, "policy.default")?,
    };
    let rules = match obj.get("rules") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_rule(item, &format!("policy.rules[{i}]")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("policy.rules: expected an array of rules".to_owned()),
    };
    let hides = Policy::can_hide(default, &rules);
    let uses = rules.iter().any(|rule: &Rule| rule.item.is_some());
    let use_hides = Policy::can_hide_uses(&rules);
    Ok(Policy {
        default,
        rules,
        hides,
        uses,
        use_hides,
    })
}

/// The error of a rule that names more than one kind of item.
fn one_kind(path: &str) -> String {
    format!(
        r#"{path}: a rule is about one kind of item: give at most one of "tool", "prompt" and "resource""#
    )
}

fn as_object<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{path}: expected an object"))
}

fn refuse_unknown(
    obj: &Map<String, Value>,
    path: &str,
    known: &[&str],
    what: &str,
) -> Result<(), String> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(format!("{path}: unknown {what} {}", quote(key))),
        None => Ok(()),
    }
}

fn parse_action(value: &Value, path: &str) -> Result<Action, String> {
    match value.as_str() {
        Some("allow") => Ok(Action::Allow),
        Some("deny") => Ok(Action::Deny),
        _ => Err(format!(r#"{path}: expected "allow" or "deny""#)),
    }
}

const RULE_KEYS: &[&str] = &[
    "action",
    "server",
    "tool",
    "prompt",
    "resource",
    "annotations",
    "arguments",
    "principal",
];

fn parse_rule(value: &Value, path: &str) -> Result<Rule, String> {
    let obj = as_object(value, path)?;
    refuse_unknown(obj, path, RULE_KEYS, "condition")?;
    let action = match obj.get("action") {
        Some(v) => parse_action(v, &format!("{path}.action"))?,
        None => {
            return Err(format!(
                r#"{path}.action: missing; expected "allow" or "deny""#
            ));
        }
    };
    let glob = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None => Ok(None),
            Some(Value::String(g)) if !g.is_empty() => Ok(Some(g.clone())),
            Some(_) => Err(format!("{path}.{key}: expected a non-empty glob string")),
        }
    };
    let annotations = match obj.get("annotations") {
        None => Vec::new(),
        Some(v) => as_object(v, &format!("{path}.annotations"))?
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    let arguments = match obj.get("arguments") {
        None => Vec::new(),
        Some(v) => parse_arguments(v, &format!("{path}.arguments"))?,
    };
    let principal = match obj.get("principal") {
        None => None,
        Some(v) => Some(parse_principal(v, &format!("{path}.principal"))?),
    };
    let tool = glob("tool")?;
    let item = match (glob("prompt")?, glob("resource")?) {
        (None, None) => None,
        (Some(prompt), None) => Some((UseKind::Prompt, prompt)),
        (None, Some(uri)) => Some((UseKind::Resource, uri)),
        (Some(_), Some(_)) => return Err(one_kind(path)),
    };
    if let Some((kind, _)) = &item {
        if tool.is_some() {
            return Err(one_kind(path));
        }
        if !annotations.is_empty() {
            return Err(format!(
                "{path}.annotations: only a tool has annotations; this rule is about a {}",
                kind.condition()
            ));
        }
        if *kind == UseKind::Resource && !arguments.is_empty() {
            return Err(format!(
                "{path}.arguments: a resources/read has no arguments; this rule is about a resource"
            ));
        }
    }
    Ok(Rule {
        action,
        server: glob("server")?,
        tool,
        item,
        annotations,
        arguments,
        principal,
    })
}

fn parse_arguments(value: &Value, path: &str) -> Result<Vec<ArgumentCondition>, String> {
    let obj = as_object(value, path)?;
    let mut conditions = Vec::with_capacity(obj.len());
    for (pointer, predicates) in obj {
        let here = format!("{path}.{pointer}");
        let tokens = parse_pointer(pointer).map_err(|why| format!("{here}: {why}"))?;
        let predicates = parse_predicates(predicates, &here)?;
        conditions.push(ArgumentCondition {
            pointer: pointer.clone(),
            tokens,
            predicates,
        });
    }
    Ok(conditions)
}

/// RFC 6901: `""` is the whole value; otherwise `/`-separated tokens with `~1` → `/` and
/// `~0` → `~`.
fn parse_pointer(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(body) = pointer.strip_prefix('/') else {
        return Err(r#"invalid JSON pointer: it must be empty or start with "/""#.to_owned());
    };
    body.split('/').map(unescape_token).collect()
}

fn unescape_token(token: &str) -> Result<String, String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => return Err(r#"invalid JSON pointer: "~" must be followed by "0" or "1""#.into()),
        }
    }
    Ok(out)
}

fn parse_predicates(value: &Value, path: &str) -> Result<Vec<Predicate>, String> {
    let obj = as_object(value, path)?;
    if obj.is_empty() {
        return Err(format!(
            "{path}: expected at least one of in, not_in, prefix, max_length"
        ));
    }
    let mut predicates = Vec::with_capacity(obj.len());
    for (name, arg) in obj {
        let here = format!("{path}.{name}");
        let predicate = match name.as_str() {
            "in" => Predicate::In(parse_values(arg, &here)?),
            "not_in" => Predicate::NotIn(parse_values(arg, &here)?),
            "prefix" => match arg {
                Value::String(p) => Predicate::Prefix(p.clone()),
                _ => return Err(format!("{here}: expected a string")),
            },
            "max_length" => match arg.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) => Predicate::MaxLength(n),
                None => return Err(format!("{here}: expected a non-negative integer")),
            },
            _ => return Err(format!("{path}: unknown predicate {}", quote(name))),
        };
        predicates.push(predicate);
    }
    Ok(predicates)
}

fn parse_values(value: &Value, path: &str) -> Result<Vec<Value>, String> {
    match value {
        Value::Array(items) if !items.is_empty() => Ok(items.clone()),
        _ => Err(format!("{path}: expected a non-empty array of values")),
    }
}

fn parse_principal(value: &Value, path: &str) -> Result<Principal, String> {
    let obj = as_object(value, path)?;
    refuse_unknown(obj, path, &["header", "metadata", "in"], "key")?;
    let values = match obj.get("in") {
        Some(v) => parse_values(v, &format!("{path}.in"))?,
        None => {
            return Err(format!(
                "{path}.in: missing; expected a non-empty array of values"
            ));
        }
    };
    let source = match (obj.get("header"), obj.get("metadata")) {
        (Some(header), None) => PrincipalSource::Header(parse_header_name(header, path)?),
        (None, Some(metadata)) => PrincipalSource::Metadata(parse_metadata_path(metadata, path)?),
        _ => {
            return Err(format!(
                r#"{path}: expected exactly one of "header" or "metadata""#
            ));
        }
    };
    if let PrincipalSource::Header(_) = source
        && let Some(i) = values.iter().position(|v| !v.is_string())
    {
        return Err(format!(
            "{path}.in[{i}]: expected a string (header values are text)"
        ));
    }
    Ok(Principal { source, values })
}

fn parse_header_name(value: &Value, path: &str) -> Result<String, String> {
    match value.as_str() {
        Some(name)
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':') =>
        {
            Ok(name.to_ascii_lowercase())
        }
        _ => Err(format!("{path}.header: expected an HTTP header name")),
    }
}

fn parse_metadata_path(value: &Value, path: &str) -> Result<String, String> {
    match value.as_str() {
        Some(p) if p.split('/').count() >= 2 && p.split('/').all(|s| !s.is_empty()) => {
            Ok(p.to_owned())
        }
        _ => Err(format!(
            r#"{path}.metadata: expected "NAMESPACE/key[/key...]", e.g. "envoy.filters.http.jwt_authn/payload/groups""#
        )),
    }
}

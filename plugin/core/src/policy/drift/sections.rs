//! The sections beside tools: instructions, prompts, resource templates and (when sealed)
//! resources, item by item.
//!
//! An item is compared only when its digest moved ([`crate::policy::section`]), so what the
//! surface fingerprint ignores (`_meta`, a prompt's arguments in another order, a resource's
//! `size`) never shows up, and a digest that moved always shows: what the walk below does
//! not classify is one `field_changed` (breaking) for the whole item. Classes follow the
//! tools': an added item is additive, a removed one breaking; changed model-facing text
//! (instructions, a description, a title, a display name, icons) semantic; a prompt argument
//! added optional additive, added required, removed or made required breaking, made
//! optional authority (the prompt now runs without it); any other member breaking.

use super::schema_diff::child;
use super::{Change, ChangeClass, ChangeKind};
use crate::policy::section::{Section, item_digest};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Every change of `section` between `old` and `new` (the section's member of two results:
/// an array of items, or the instructions text; `Value::Null` when absent).
pub(super) fn diff_section(section: Section, old: &Value, new: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    if section == Section::Instructions {
        instructions(old, new, &mut changes);
        return changes;
    }
    let old_items = index(section, old, true, &mut changes);
    let new_items = index(section, new, false, &mut changes);
    for (key, item) in &old_items {
        if !new_items.contains_key(key) {
            let removed = (Some((*item).clone()), None);
            changes.push(change(
                key,
                String::new(),
                ChangeKind::ItemRemoved,
                ChangeClass::Breaking,
                removed,
            ));
        }
    }
    for (key, item) in &new_items {
        match old_items.get(key) {
            None => {
                let added = (None, Some((*item).clone()));
                changes.push(change(
                    key,
                    String::new(),
                    ChangeKind::ItemAdded,
                    ChangeClass::Additive,
                    added,
                ));
            }
            Some(before) if item_digest(section, before) != item_digest(section, item) => {
                diff_item(section, key, before, item, &mut changes);
            }
            Some(_) => {}
        }
    }
    changes
}

/// The instructions: one text against one, or (a catalogue holding a text per kind of
/// caller) each text one has and the other lacks. Texts are strings: equal exactly when
/// their digests are.
fn instructions(old: &Value, new: &Value, changes: &mut Vec<Change>) {
    let texts = |v: &'_ Value| -> Vec<String> {
        match v {
            Value::Array(texts) => texts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            text => text.as_str().map(str::to_owned).into_iter().collect(),
        }
    };
    let (before, after) = (texts(old), texts(new));
    let mut pairs: Vec<(Option<&String>, Option<&String>)> = Vec::new();
    if before.len() <= 1 && after.len() <= 1 {
        pairs.push((before.first(), after.first()));
    } else {
        pairs.extend(
            before
                .iter()
                .filter(|t| !after.contains(t))
                .map(|t| (Some(t), None)),
        );
        pairs.extend(
            after
                .iter()
                .filter(|t| !before.contains(t))
                .map(|t| (None, Some(t))),
        );
    }
    for (old, new) in pairs {
        if old != new {
            let kind = ChangeKind::InstructionsChanged;
            let texts = (
                old.cloned().map(Value::String),
                new.cloned().map(Value::String),
            );
            changes.push(change(
                "instructions",
                String::new(),
                kind,
                ChangeClass::Semantic,
                texts,
            ));
        }
    }
}

fn change(
    key: &str,
    path: String,
    kind: ChangeKind,
    class: ChangeClass,
    (before, after): (Option<Value>, Option<Value>),
) -> Change {
    Change {
        tool: key.to_owned(),
        path,
        kind,
        class,
        before,
        after,
    }
}

/// Items by key; an item that is not an object with a string key, or repeats one, is an
/// `invalid_item`.
fn index<'a>(
    section: Section,
    items: &'a Value,
    baseline: bool,
    changes: &mut Vec<Change>,
) -> BTreeMap<&'a str, &'a Value> {
    let mut by_key = BTreeMap::new();
    let key_member = section.key_member().unwrap_or("name");
    let list: &[Value] = match items {
        Value::Array(list) => list,
        Value::Null => &[],
        other => std::slice::from_ref(other),
    };
    for (i, item) in list.iter().enumerate() {
        let key = item.get(key_member).and_then(Value::as_str);
        let problem = match key {
            Some(key) if !by_key.contains_key(key) => {
                by_key.insert(key, item);
                continue;
            }
            Some(key) => key.to_owned(),
            None => format!("#{i}"),
        };
        let pair = match baseline {
            true => (Some(item.clone()), None),
            false => (None, Some(item.clone())),
        };
        changes.push(change(
            &problem,
            String::new(),
            ChangeKind::InvalidItem,
            ChangeClass::Breaking,
            pair,
        ));
    }
    by_key
}

/// The member names of two objects, each once, sorted.
fn member_names<'a>(old: &'a Map<String, Value>, new: &'a Map<String, Value>) -> Vec<&'a str> {
    // The project's one sort, not the standard library's: each sort instantiated for another
    // element type is more code in the `.wasm`.
    crate::wire::order::name_set(old.keys().chain(new.keys()).map(String::as_str))
}

/// Member-by-member changes of an item whose digest moved.
fn diff_item(section: Section, key: &str, old: &Value, new: &Value, changes: &mut Vec<Change>) {
    let start = changes.len();
    let empty = Map::new();
    let old_members = old.as_object().unwrap_or(&empty);
    let new_members = new.as_object().unwrap_or(&empty);
    for member in member_names(old_members, new_members) {
        if member == "_meta" || (section == Section::Resources && member == "size") {
            continue;
        }
        let (before, after) = (old_members.get(member), new_members.get(member));
        if before == after {
            continue;
        }
        let path = child("", member);
        if section == Section::Prompts && member == "arguments" {
            diff_arguments(key, &path, before, after, changes);
            continue;
        }
        let (kind, class) = match member {
            "description" => (ChangeKind::DescriptionChanged, ChangeClass::Semantic),
            "title" | "name" => (ChangeKind::TitleChanged, ChangeClass::Semantic),
            "icons" => (ChangeKind::IconsChanged, ChangeClass::Semantic),
            _ => (ChangeKind::FieldChanged, ChangeClass::Breaking),
        };
        changes.push(change(
            key,
            path,
            kind,
            class,
            (before.cloned(), after.cloned()),
        ));
    }
    if changes.len() == start {
        // The digest moved and no member did as compared here: say so for the whole item.
        changes.push(change(
            key,
            String::new(),
            ChangeKind::FieldChanged,
            ChangeClass::Breaking,
            (Some(old.clone()), Some(new.clone())),
        ));
    }
}

/// A prompt's arguments, matched by name.
fn diff_arguments(
    key: &str,
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    changes: &mut Vec<Change>,
) {
    let named = |list: Option<&Value>| -> Option<BTreeMap<String, Value>> {
        let mut by_name = BTreeMap::new();
        for argument in list.map_or(&[][..], |l| l.as_array().map_or(&[][..], Vec::as_slice)) {
            let name = argument.get("name")?.as_str()?.to_owned();
            if by_name.insert(name, argument.clone()).is_some() {
                return None;
            }
        }
        let well_formed = list.is_none_or(Value::is_array);
        well_formed.then_some(by_name)
    };
    let (Some(before), Some(after)) = (named(old), named(new)) else {
        // Arguments the walk cannot match by name: one change for the whole member.
        let pair = (old.cloned(), new.cloned());
        changes.push(change(
            key,
            path.to_owned(),
            ChangeKind::FieldChanged,
            ChangeClass::Breaking,
            pair,
        ));
        return;
    };
    let required =
        |argument: &Value| argument.get("required").and_then(Value::as_bool) == Some(true);
    for (name, argument) in &before {
        if !after.contains_key(name) {
            let pair = (Some(argument.clone()), None);
            changes.push(change(
                key,
                child(path, name),
                ChangeKind::ArgumentRemoved,
                ChangeClass::Breaking,
                pair,
            ));
        }
    }
    for (name, argument) in &after {
        let at = child(path, name);
        let Some(was) = before.get(name) else {
            let (kind, class) = match required(argument) {
                true => (ChangeKind::ArgumentAddedRequired, ChangeClass::Breaking),
                false => (ChangeKind::ArgumentAddedOptional, ChangeClass::Additive),
            };
            changes.push(change(key, at, kind, class, (None, Some(argument.clone()))));
            continue;
        };
        if was == argument {
            continue;
        }
        match (required(was), required(argument)) {
            (false, true) => changes.push(change(
                key,
                child(&at, "required"),
                ChangeKind::ArgumentRequired,
                ChangeClass::Breaking,
                (
                    was.get("required").cloned(),
                    argument.get("required").cloned(),
                ),
            )),
            (true, false) => changes.push(change(
                key,
                child(&at, "required"),
                ChangeKind::ArgumentOptional,
                ChangeClass::Authority,
                (
                    was.get("required").cloned(),
                    argument.get("required").cloned(),
                ),
            )),
            _ => {}
        }
        let empty = Map::new();
        let (old_members, new_members) = (
            was.as_object().unwrap_or(&empty),
            argument.as_object().unwrap_or(&empty),
        );
        for member in member_names(old_members, new_members) {
            let (b, a) = (old_members.get(member), new_members.get(member));
            if b == a || member == "required" || member == "name" {
                continue;
            }
            let (kind, class) = match member {
                "description" => (ChangeKind::DescriptionChanged, ChangeClass::Semantic),
                "title" => (ChangeKind::TitleChanged, ChangeClass::Semantic),
                _ => (ChangeKind::FieldChanged, ChangeClass::Breaking),
            };
            changes.push(change(
                key,
                child(&at, member),
                kind,
                class,
                (b.cloned(), a.cloned()),
            ));
        }
    }
}

//! `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else` and `$ref`.

use super::{Path, Walker};
use crate::policy::schema::keywords::{Check, NodeId};
use serde_json::Value;

/// Most alternatives whose first violation an `anyOf`/`oneOf` message quotes.
const MAX_HINTS: usize = 3;

impl<'s> Walker<'s> {
    pub(super) fn applicator<'i>(
        &mut self,
        check: &'s Check,
        inst: &'i Value,
        path: &mut Path<'i>,
        dive: usize,
    ) -> bool {
        match check {
            Check::AllOf(ids) => {
                let mut valid = true;
                for id in ids {
                    valid &= self.check(*id, inst, path, dive + 1);
                    if !valid && self.full() {
                        break;
                    }
                }
                valid
            }
            Check::AnyOf(ids) => self.alternatives(ids, inst, path, dive, false),
            Check::OneOf(ids) => self.alternatives(ids, inst, path, dive, true),
            Check::Not(id) => {
                let (matched, _) = self.probe(*id, inst, path, dive);
                if self.aborted.is_some() {
                    return false;
                }
                !matched
                    || self.fail(
                        path,
                        "value must not match the schema under 'not'".to_owned(),
                    )
            }
            Check::IfThenElse {
                condition,
                then,
                otherwise,
            } => {
                let (holds, _) = self.probe(*condition, inst, path, dive);
                if self.aborted.is_some() {
                    return false;
                }
                let branch = if holds { *then } else { *otherwise };
                branch.is_none_or(|id| self.check(id, inst, path, dive + 1))
            }
            Check::Ref(id) => self.check(*id, inst, path, dive + 1),
            _ => true,
        }
    }

    /// `anyOf` (`exactly_one` false) or `oneOf` (true).
    fn alternatives<'i>(
        &mut self,
        ids: &'s [NodeId],
        inst: &'i Value,
        path: &mut Path<'i>,
        dive: usize,
        exactly_one: bool,
    ) -> bool {
        let keyword = if exactly_one { "oneOf" } else { "anyOf" };
        let mut matched = Vec::new();
        let mut hints = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            let (ok, first) = self.probe(*id, inst, path, dive);
            if self.aborted.is_some() {
                return false;
            }
            if ok {
                matched.push(i);
                if !exactly_one || matched.len() > 1 {
                    break;
                }
            } else if let Some(v) = first.filter(|_| hints.len() < MAX_HINTS) {
                hints.push(format!("[{i}] {v}"));
            }
        }
        match matched.as_slice() {
            [] => {
                let n = ids.len();
                let msg = format!(
                    "value matches none of the {n} alternatives of {keyword}: {}",
                    hints.join("; ")
                );
                self.fail(path, msg)
            }
            [_] => true,
            [a, b, ..] if exactly_one => {
                let msg = format!(
                    "value matches alternatives {a} and {b} of oneOf; it must match exactly one"
                );
                self.fail(path, msg)
            }
            _ => true,
        }
    }
}

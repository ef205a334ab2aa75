//! What a closed server shows and serves beyond its tools: its prompts and resources, and the
//! instructions its handshake carries.
//!
//! Main design decision: a server that drifted, awaits approval or is quarantined (and under
//! tool scope serves nothing at all) is closed as a whole, not only its tool list. A model
//! reads the server's instructions, prompts and resources as it reads tool descriptions, so a
//! closed server's `prompts/list`, `resources/list` and `resources/templates/list` are
//! answered like its `tools/list` (empty, a `_meta` note, not cacheable), its `initialize` or
//! `server/discover` answer goes to the client without `instructions`, and a `prompts/get` or
//! `resources/read` is refused before it reaches the server, as a JSON-RPC error carrying the
//! fields of a tool denial. Only the server's status decides here (the prompts and resources
//! themselves are not fingerprinted): a server never closed, or one without a baseline yet
//! (nothing of it listed), is left alone, so this never closes what a tools-only seal would
//! not.

use crate::gateway::denial::{Denial, ErrorCode};
use crate::gateway::engine::Engine;
use crate::gateway::exchange::{Exchange, RequestInfo};
use crate::gateway::listing::answer::{self, ListNote};
use crate::policy::containment::{self, Serving};
use crate::policy::rules::{Action, UseFacts, UseKind};
use crate::policy::section::Section;
use crate::policy::status::{SchemaStatus, ServerRecord};
use crate::state::audit::{Counter, Outputs};
use crate::state::store::StateStore;
use crate::wire::json::put;
use serde_json::{Map, Value};

/// Whether a request of `method` uses one item of a section (a prompt, a resource).
pub(crate) fn is_use(method: &str) -> bool {
    Section::used_by(method).is_some()
}

/// The kind of use policy rules name the items of `section` by (`None`: tools, decided as
/// calls, and sections no request uses one by one).
pub(crate) fn use_kind(section: Section) -> Option<UseKind> {
    match section {
        Section::Prompts => Some(UseKind::Prompt),
        Section::Resources => Some(UseKind::Resource),
        _ => None,
    }
}

impl Engine {
    /// The record of a closed server (`None`: not closed, or never seen), or, for a use of
    /// `item`, of one whose drift reaches that item (under tool scope a drifted server serves
    /// on, but not what its drift reaches). A record that cannot be read closes: what the
    /// server may show is unknown.
    fn closed_record(
        &mut self,
        store: &dyn StateStore,
        server: &str,
        item: Option<(Section, &str)>,
    ) -> Result<Option<std::rc::Rc<ServerRecord>>, String> {
        let record = match self.record(store, server) {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let scope = self.config.drift_scope_of(server);
        let closed = ErrorCode::for_closed(record.status).is_some()
            && (containment::serving(&record, scope) == Serving::Nothing
                || item.is_some_and(|(section, item)| record.reaches_item(section, item)));
        Ok(closed.then_some(record))
    }

    /// The refusal of a request that uses a prompt or resource (`None`: not such a request,
    /// or it may be used): of a closed server, not approved or listed, or refused by a policy
    /// rule, in that order (policy comes last, as for a call).
    pub(crate) fn use_refusal(
        &mut self,
        store: &dyn StateStore,
        (exchange, info): (&Exchange, &RequestInfo<'_>),
        method: &str,
        params: Option<&Value>,
    ) -> Option<Box<Denial>> {
        let section = Section::used_by(method)?;
        let (_, param) = section.use_request()?;
        let item = params
            .and_then(|p| p.get(param))
            .and_then(Value::as_str)
            .unwrap_or("");
        let used = (section, item);
        self.use_check(store, (exchange, info), used, params)
            .or_else(|| self.use_policy(store, (exchange, info), used, params))
    }

    /// A use refused by a policy rule about prompts or resources (`POLICY_DENIED`,
    /// `required_action: "none"`).
    fn use_policy(
        &mut self,
        store: &dyn StateStore,
        (exchange, info): (&Exchange, &RequestInfo<'_>),
        (section, item): (Section, &str),
        params: Option<&Value>,
    ) -> Option<Box<Denial>> {
        let kind = use_kind(section)?;
        let facts = UseFacts {
            server: &exchange.server,
            kind,
            item,
            arguments: params.and_then(|p| p.get("arguments")),
            caller: info.caller,
        };
        let decision = self.config.policy.evaluate_use(&facts)?;
        if decision.action == Action::Allow {
            return None;
        }
        let what = format!("{} {item:?}", section.item_word());
        let record = self.record(store, &exchange.server).ok().flatten();
        let code = ErrorCode::PolicyDenied;
        let denial = self.use_denial(
            code,
            exchange,
            &what,
            record.as_deref(),
            &decision.reason,
            item,
        );
        Some(Box::new(denial))
    }

    /// The refusal of a use of `item` of `section` on a closed server, or of one not approved
    /// or listed (`None`: none of these).
    fn use_check(
        &mut self,
        store: &dyn StateStore,
        (exchange, info): (&Exchange, &RequestInfo<'_>),
        (section, item): (Section, &str),
        params: Option<&Value>,
    ) -> Option<Box<Denial>> {
        let what = format!("{} {item:?}", section.item_word());
        // A URI that screening withholds from every list is refused whatever the server's
        // status: a client that reads it made it up, or was told to.
        let screened =
            section == Section::Resources && self.config.screens_resources(&exchange.server);
        let flagged = match screened {
            true => crate::gateway::resources::uri_finding(item),
            false => None,
        };
        if let Some(finding) = flagged {
            let code = ErrorCode::ResourceNotListed;
            let record = self.record(store, &exchange.server).ok().flatten();
            let denial = self.use_denial(code, exchange, &what, record.as_deref(), &finding, item);
            return Some(Box::new(denial));
        }
        let closed = self.closed_record(store, &exchange.server, Some((section, item)));
        let (code, record, detail) = match closed {
            Ok(None) if section == Section::Prompts => {
                return self.prompt_refusal(store, (exchange, info), item, params);
            }
            Ok(None) => {
                let (code, why) = self.unlisted_read(store, (exchange, info), params, item)?;
                let record = self.record(store, &exchange.server).ok().flatten();
                let denial = self.use_denial(code, exchange, &what, record.as_deref(), &why, item);
                return Some(Box::new(denial));
            }
            Ok(Some(record)) => {
                let code = ErrorCode::for_closed(record.status)?;
                (code, Some(record), String::new())
            }
            Err(why) => (ErrorCode::SchemaUnverified, None, why),
        };
        let denial = self.use_denial(code, exchange, &what, record.as_deref(), &detail, item);
        Some(Box::new(denial))
    }

    /// The refusal of a `prompts/get` of a server that seals its prompts (`None`: it does
    /// not, or not yet, or the request names an approved prompt listed to the caller's view,
    /// with exactly its declared arguments: every `required` one, nothing undeclared). The
    /// catalogue is the one baseline every caller's prompts are checked against.
    fn prompt_refusal(
        &mut self,
        store: &dyn StateStore,
        (exchange, info): (&Exchange, &RequestInfo<'_>),
        name: &str,
        params: Option<&Value>,
    ) -> Option<Box<Denial>> {
        let section = Section::Prompts;
        if !self.config.seals(&exchange.server, section) {
            return None;
        }
        let what = format!("prompt {name:?}");
        let record = match self.record(store, &exchange.server) {
            Ok(record) => record,
            Err(e) => {
                let why = e.to_string();
                let code = ErrorCode::SchemaUnverified;
                return Some(Box::new(
                    self.use_denial(code, exchange, &what, None, &why, name),
                ));
            }
        };
        let baseline = record.as_ref()?.baseline.clone()?;
        let catalogue = match self.approved(store, &exchange.server, &baseline) {
            Ok(Some(catalogue)) => catalogue,
            Ok(None) | Err(_) => {
                let why = format!("the approved catalogue {baseline} cannot be read");
                let code = ErrorCode::SchemaUnverified;
                let record = record.as_deref();
                return Some(Box::new(
                    self.use_denial(code, exchange, &what, record, &why, name),
                ));
            }
        };
        if !catalogue.sealed.contains(&section) {
            return None;
        }
        let Some(prompt) = catalogue.item(section, name) else {
            let code = ErrorCode::PromptNotApproved;
            let record = record.as_deref();
            return Some(Box::new(
                self.use_denial(code, exchange, &what, record, "", name),
            ));
        };
        if let Some(record) = record.as_deref()
            && self.outside_view(store, (exchange, info), params, record, (section, name))
        {
            let code = ErrorCode::PromptNotApproved;
            let mut denial = self.use_denial(code, exchange, &what, Some(record), "", name);
            // Listing again will not show it: the server does not offer it to this caller.
            denial.message = format!(
                "{what} was refused: it is not listed to this caller's view of the server (the server offers it to other kinds of callers only). The server did not receive the request."
            );
            denial.required_action = "none";
            return Some(Box::new(denial));
        }
        let record = record.as_deref();
        let declared = prompt.definition.get("arguments").and_then(Value::as_array);
        let declared = declared.map_or(&[][..], Vec::as_slice);
        let arg_name = |a: &Value| a.get("name").and_then(Value::as_str).map(str::to_string);
        let given = params.and_then(|p| p.get("arguments"));
        let wrong = match given {
            None | Some(Value::Null) => None,
            Some(Value::Object(given)) => given
                .keys()
                .find(|k| {
                    !declared
                        .iter()
                        .any(|a| arg_name(a).as_deref() == Some(k.as_str()))
                })
                .map(|k| format!("undeclared argument {k:?}")),
            Some(_) => Some("`arguments` is not an object".to_string()),
        };
        let missing = declared
            .iter()
            .filter(|a| a.get("required").and_then(Value::as_bool) == Some(true))
            .filter_map(arg_name)
            .find(|n| given.and_then(|g| g.get(n.as_str())).is_none())
            .map(|n| format!("missing required argument {n:?}"));
        let why = wrong.or(missing)?;
        let code = ErrorCode::InvalidArguments;
        Some(Box::new(
            self.use_denial(code, exchange, &what, record, &why, name),
        ))
    }

    /// Whether `item` of `section`, in the catalogue, was never listed to the caller's view
    /// although that view's items are recorded. Which view the caller is (a capabilities
    /// slot read and a hash) is asked only when some recorded view was not listed the item;
    /// a view that cannot be told, or whose items are not recorded, uses the catalogue.
    #[inline(never)]
    pub(crate) fn outside_view(
        &mut self,
        store: &dyn StateStore,
        (exchange, info): (&Exchange, &RequestInfo<'_>),
        params: Option<&Value>,
        record: &ServerRecord,
        (section, item): (Section, &str),
    ) -> bool {
        if record.section_names.listed_to_all(section, item) {
            return false;
        }
        let read;
        let view = match &exchange.surface {
            Some(surface) => surface,
            None => {
                read = self.view_of(store, exchange, info, params, None);
                &read
            }
        };
        view.as_ref()
            .is_ok_and(|v| record.section_names.lists(section, &v.key, item) == Some(false))
    }

    /// A denial of a use of `item` (a prompt's name, a resource's URI).
    fn use_denial(
        &self,
        code: ErrorCode,
        exchange: &Exchange,
        what: &str,
        record: Option<&ServerRecord>,
        detail: &str,
        item: &str,
    ) -> Denial {
        let mut denial = self.denial(code, exchange, what, record, detail);
        denial.tool = item.to_string();
        denial
    }

    /// Answers a refused use: audited (`use.denied`), recorded and counted; the JSON-RPC
    /// error that answers it.
    pub(crate) fn refuse_use(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        (id, method): (&Value, &str),
        denial: &Denial,
    ) -> Value {
        let kind = Section::used_by(method).map_or("item", Section::item_word);
        let code = denial.code.as_str();
        out.count(Counter::UsesDenied, Some(code));
        let mut detail = Map::new();
        put(&mut detail, "method", Value::from(method));
        put(&mut detail, kind, Value::from(denial.tool.as_str()));
        put(&mut detail, "error_code", Value::from(code));
        let event = self.event(
            "use.denied",
            exchange,
            now_ms,
            None,
            &denial.message,
            detail,
        );
        self.emit(store, out, &event);
        let mut decision = self.decision(exchange, "request", method, Some(id), denial.status);
        decision.decision = "deny";
        decision.error_code = Some(code);
        out.decision(&decision);
        denial.use_error(id, kind)
    }

    /// The answer a closed server's client receives instead of `result`, the answer to
    /// request `id`, a `method` (`None`: forwarded as it is). A replaced answer is audited
    /// (`surface.withheld`) and recorded.
    pub(crate) fn closed_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        answered: (&Value, &str),
        result: &Value,
    ) -> Option<Value> {
        // A tool list is closed by its own path ([`crate::gateway::listing`]).
        let (_, section) = Section::shown_by(answered.1).filter(|(_, s)| *s != Section::Tools)?;
        if section == Section::Instructions && result.get(section.items_member()).is_none() {
            return None;
        }
        let (record, reason) = match self.closed_record(store, &exchange.server, None) {
            Ok(None) => return None,
            Ok(Some(record)) => {
                let scope = self.config.drift_scope_of(&exchange.server);
                let reason = crate::gateway::listing::closed_reason(&record, scope, false);
                (Some(record), reason)
            }
            Err(why) => (None, format!("the server's record cannot be read ({why})")),
        };
        let shown = (section, result);
        let record = record.as_deref();
        let withheld = (None, reason.as_str());
        Some(self.withheld_answer(
            store, out, now_ms, exchange, answered, shown, withheld, record,
        ))
    }

    /// The answer `result` to `(id, method)` without the items of `section` that `keys` names
    /// (every item when `None`; a handshake answer without its instructions), with a `_meta`
    /// note saying why (`record`: the server's, when it could be read); audited
    /// (`surface.withheld`) and recorded. A closed server's answers, and a sealed section's
    /// items the catalogue does not hold ([`crate::gateway::sealed`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn withheld_answer(
        &mut self,
        store: &mut dyn StateStore,
        out: &mut dyn Outputs,
        now_ms: u64,
        exchange: &Exchange,
        (id, method): (&Value, &str),
        (section, result): (Section, &Value),
        (keys, reason): (Option<&[String]>, &str),
        record: Option<&ServerRecord>,
    ) -> Value {
        let mut detail = Map::new();
        put(&mut detail, "method", Value::from(method));
        if let Some(keys) = keys {
            let named = keys.iter().take(16).map(|k| Value::from(k.as_str()));
            put(&mut detail, "withheld", Value::Array(named.collect()));
        }
        let event = self.event(
            "surface.withheld",
            exchange,
            now_ms,
            record,
            &format!("{} withheld: {reason}", section.items_member()),
            detail,
        );
        self.emit(store, out, &event);
        let status = record.map_or(SchemaStatus::Unbaselined, |r| r.status);
        let mut decision = self.decision(exchange, "response", method, Some(id), status);
        decision.decision = "rewrite";
        out.decision(&decision);
        let note = ListNote {
            server: &exchange.server,
            record,
            reason,
            withheld: keys.map(<[String]>::len),
            hidden: 0,
        };
        without(result, section, keys, &note, exchange.stateless())
    }
}

impl Engine {
    /// A list of prompts or resources without the items policy refuses this caller to use
    /// whatever the arguments (caller-scoped lists, as for tools): `served` is the result the
    /// answer serves so far; `None` when nothing of it is hidden. The `_meta` note counts the
    /// items hidden (`hidden_by_policy`), never names them.
    pub(crate) fn hidden_by_policy(
        &mut self,
        store: &dyn StateStore,
        exchange: &Exchange,
        method: &str,
        served: &Value,
    ) -> Option<Value> {
        let (_, section) = Section::shown_by(method)?;
        let kind = use_kind(section)?;
        let key_member = section.key_member()?;
        let policy = &self.config.policy;
        // An answer no request of this exchange asked for (a resumed stream) has a caller
        // nobody can tell: whatever a principal would decide is refused, as for tool lists.
        let unknown;
        let view = match &exchange.uses_caller {
            Some(view) => view,
            None => {
                unknown = policy.unknown_use_caller()?;
                &unknown
            }
        };
        let items = served.get(section.items_member()).and_then(Value::as_array);
        let hidden: Vec<String> = items
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|item| item.get(key_member).and_then(Value::as_str))
            .filter(|key| policy.hides_use(view, &exchange.server, kind, key))
            .map(str::to_string)
            .collect();
        if hidden.is_empty() {
            return None;
        }
        let record = self.record(store, &exchange.server).ok().flatten();
        let reason = match kind {
            UseKind::Prompt => "some prompts are not listed: policy refuses them to this caller",
            UseKind::Resource => {
                "some resources are not listed: policy refuses them to this caller"
            }
        };
        let note = ListNote {
            server: &exchange.server,
            record: record.as_deref(),
            reason,
            withheld: None,
            hidden: hidden.len(),
        };
        let mut kept = without(served, section, Some(&hidden), &note, exchange.stateless());
        // A note the answer already carries (items withheld from it) stays, with the count.
        let previous = served.get("_meta").and_then(|m| m.get(answer::META_KEY));
        if let (Some(Value::Object(previous)), Value::Object(out)) = (previous, &mut kept) {
            let mut merged = previous.clone();
            put(&mut merged, "hidden_by_policy", Value::from(hidden.len()));
            answer::put_note(out, Value::Object(merged));
        }
        Some(kept)
    }
}

/// `result` without the items `keys` names (every item: `None`), or without its
/// instructions, with the note in `_meta`; a closed list's cache hints when nothing is left.
fn without(
    result: &Value,
    section: Section,
    keys: Option<&[String]>,
    note: &ListNote<'_>,
    stateless: bool,
) -> Value {
    let Some(object) = result.as_object() else {
        return result.clone();
    };
    let member = section.items_member();
    let Some(key_member) = section.key_member() else {
        let mut out = object.clone();
        out.remove(member);
        answer::put_note(&mut out, answer::status_note(note));
        return Value::Object(out);
    };
    let mut out = match answer::rewrite(result, member, note, answer::Hints::Closed, stateless) {
        Value::Object(out) => out,
        other => return other,
    };
    if let Some(keys) = keys {
        let kept: Vec<Value> = object
            .get(member)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(|item| {
                let key = item.get(key_member).and_then(Value::as_str).unwrap_or("");
                !keys.iter().any(|k| k == key)
            })
            .cloned()
            .collect();
        put(&mut out, member, Value::Array(kept));
    }
    Value::Object(out)
}

//! Where the component's audit events and decision records go.
//!
//! Main design decision: one JSON object per line, written and flushed as it comes, so an
//! operator can `tail -f` the trail and a crash loses nothing already decided. Decision
//! records (one per MCP message) are dropped unless asked for; audit events never are.

use std::io::Write;

/// A destination for what the policy reports.
pub trait AuditSink {
    /// One audit event (JSON object text).
    fn event(&mut self, json: &str);
    /// One per-message decision record (JSON object text).
    fn decision(&mut self, json: &str);
}

/// JSON lines to a writer (stderr or an append-only file).
pub struct JsonLines {
    writer: Box<dyn Write + Send>,
    decisions: bool,
}

impl JsonLines {
    /// Audit events (and decision records when `decisions`) to `writer`.
    pub fn new(writer: Box<dyn Write + Send>, decisions: bool) -> Self {
        JsonLines { writer, decisions }
    }

    fn line(&mut self, json: &str) {
        // The audit trail must not stop the guard: a full disk is reported once per line on
        // the same writer's failure path (stderr is the last resort).
        if writeln!(self.writer, "{json}")
            .and_then(|()| self.writer.flush())
            .is_err()
        {
            eprintln!("toolseal-stdio: cannot write an audit line: {json}");
        }
    }
}

impl AuditSink for JsonLines {
    fn event(&mut self, json: &str) {
        self.line(json);
    }

    fn decision(&mut self, json: &str) {
        if self.decisions {
            self.line(json);
        }
    }
}

/// Keeps everything in memory (tests, replays).
#[derive(Debug, Default, Clone)]
pub struct Collected {
    /// Audit events in order.
    pub events: Vec<String>,
    /// Decision records in order.
    pub decisions: Vec<String>,
}

impl AuditSink for Collected {
    fn event(&mut self, json: &str) {
        self.events.push(json.to_string());
    }

    fn decision(&mut self, json: &str) {
        self.decisions.push(json.to_string());
    }
}

/// A shared handle to a [`Collected`] sink, so a test can read it while the policy owns it.
#[derive(Debug, Default, Clone)]
pub struct SharedCollected(pub std::sync::Arc<std::sync::Mutex<Collected>>);

impl AuditSink for SharedCollected {
    fn event(&mut self, json: &str) {
        if let Ok(mut c) = self.0.lock() {
            c.event(json);
        }
    }

    fn decision(&mut self, json: &str) {
        if let Ok(mut c) = self.0.lock() {
            c.decision(json);
        }
    }
}

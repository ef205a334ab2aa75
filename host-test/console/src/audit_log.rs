//! The console's audit log: one JSON object per line, appended, never rewritten.
//!
//! Main design decision: each event is written with one `write` on a file opened in append
//! mode and synced before the action's answer goes back, so an action the page reports as
//! done is on disk; events carry who (the operator), what (action, server, the fingerprint
//! that was reviewed, the reason), what each instance showed at that moment, and the result.

use serde_json::{Value, json};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// How much of the end of the log the page is shown (bytes read from the end).
const TAIL_BYTES: u64 = 1 << 20;

/// The append-only log file.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    write: Mutex<()>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a time in milliseconds since the epoch (UTC).
pub fn rfc3339(ms: u64) -> String {
    let days = ms / 86_400_000;
    let in_day = ms % 86_400_000;
    // Civil date from a day count (proleptic Gregorian), eras of 400 years.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

impl AuditLog {
    /// The log at `path`; checks now that it can be opened for appending.
    pub fn open(path: &Path) -> Result<AuditLog, String> {
        Self::append_file(path)?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            write: Mutex::new(()),
        })
    }

    fn append_file(path: &Path) -> Result<std::fs::File, String> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                format!(
                    "cannot open the audit log {} for appending: {e}",
                    path.display()
                )
            })
    }

    /// Appends `event` (a JSON object) with `time_ms` and `time` added first.
    pub fn append(&self, event: Value) -> Result<(), String> {
        let now = now_ms();
        let mut line = json!({"time_ms": now, "time": rfc3339(now)});
        if let (Some(line), Value::Object(fields)) = (line.as_object_mut(), event) {
            line.extend(fields);
        }
        let mut text = line.to_string();
        text.push('\n');
        let _guard = self
            .write
            .lock()
            .map_err(|_| "the audit log lock is poisoned")?;
        let mut file = Self::append_file(&self.path)?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| format!("cannot write the audit log {}: {e}", self.path.display()))
    }

    /// The last `count` events, newest last (lines that are not JSON are skipped).
    pub fn recent(&self, count: usize) -> Result<Vec<Value>, String> {
        let mut file = std::fs::File::open(&self.path)
            .map_err(|e| format!("cannot read the audit log {}: {e}", self.path.display()))?;
        let length = file.metadata().map(|m| m.len()).unwrap_or(0);
        let start = length.saturating_sub(TAIL_BYTES);
        let mut text = String::new();
        file.seek(SeekFrom::Start(start))
            .and_then(|_| file.take(TAIL_BYTES).read_to_string(&mut text))
            .map_err(|e| format!("cannot read the audit log {}: {e}", self.path.display()))?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let skip = lines.len().saturating_sub(count);
        Ok(lines
            .iter()
            .skip(skip)
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
    }

    #[test]
    fn events_are_appended_and_read_back_newest_last() {
        let path =
            std::env::temp_dir().join(format!("toolseal-audit-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = AuditLog::open(&path).unwrap();
        for n in 0..5 {
            log.append(json!({"action": "approve", "n": n})).unwrap();
        }
        let recent = log.recent(2).unwrap();
        assert_eq!(
            recent
                .iter()
                .map(|e| e["n"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            [3, 4]
        );
        assert!(recent[0]["time"].as_str().unwrap().ends_with('Z'));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 5);
        std::fs::remove_file(&path).unwrap();
    }
}

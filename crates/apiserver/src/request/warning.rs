//! The warning recorder: handlers add warnings, and the warning filter turns them into
//! `Warning: 299 <agent> "<text>"` headers (`k8s.io/apiserver/pkg/endpoints/warning`).
//!
//! Like upstream, the recorder keeps the header values as it goes: warnings are deduplicated
//! by text, invalid ones (control characters, whitespace in the agent) silently dropped, and the
//! total text is budgeted at 4096 runes. When a warning would exceed the budget, every header is
//! rewritten with each text cut to 256 runes and later warnings are cut too; once the budget is
//! spent in that mode, further warnings are dropped.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Total runes of warning text before truncation starts.
const TRUNCATE_AT_TOTAL_RUNES: usize = 4 * 1024;
/// Runes each warning text is cut to once truncating.
const TRUNCATE_ITEM_RUNES: usize = 256;

/// Collects the warnings of one request.
#[derive(Debug)]
pub struct WarningRecorder {
    total_runes: usize,
    item_runes: usize,
    inner: Mutex<RecorderState>,
}

impl Default for WarningRecorder {
    fn default() -> Self {
        WarningRecorder {
            total_runes: TRUNCATE_AT_TOTAL_RUNES,
            item_runes: TRUNCATE_ITEM_RUNES,
            inner: Mutex::default(),
        }
    }
}

#[derive(Debug, Default)]
struct RecorderState {
    /// Texts seen, valid or not.
    recorded: HashSet<String>,
    /// `(agent, text)` in the order added, deduplicated by text.
    warnings: Vec<(String, String)>,
    /// The `Warning` header values to send.
    headers: Vec<String>,
    /// Runes of text in `headers`.
    written: usize,
    /// Whether texts are being cut to the item limit.
    truncating: bool,
    /// Set once the request has timed out: later warnings are dropped.
    closed: bool,
}

impl WarningRecorder {
    /// A new, shareable recorder.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A recorder with other limits (tests of the truncation rules).
    #[cfg(test)]
    fn with_limits(total_runes: usize, item_runes: usize) -> Self {
        WarningRecorder {
            total_runes,
            item_runes,
            inner: Mutex::default(),
        }
    }

    /// Adds a warning; empty text, duplicates and invalid warnings are ignored.
    pub fn add(&self, agent: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        let Ok(mut state) = self.inner.lock() else {
            return;
        };
        if state.closed || (state.truncating && state.written >= self.total_runes) {
            return;
        }
        if !state.recorded.insert(text.to_string()) {
            return;
        }
        state.warnings.push((agent.to_string(), text.to_string()));

        let (text, runes) = if state.truncating {
            truncate(text, self.item_runes)
        } else {
            (text.to_string(), text.chars().count())
        };
        let Some(header) = warning_header(agent, &text) else {
            return;
        };
        if state.truncating || state.written + runes <= self.total_runes {
            state.written += runes;
            state.headers.push(header);
            return;
        }

        // Over budget: switch to truncation and rewrite what was recorded so far.
        tracing::warn!("exceeded max warning length, truncating");
        state.truncating = true;
        state.written = 0;
        state.headers.clear();
        let warnings = state.warnings.clone();
        for (agent, text) in warnings {
            let (text, runes) = truncate(&text, self.item_runes);
            if let Some(header) = warning_header(&agent, &text) {
                state.written += runes;
                state.headers.push(header);
            }
        }
    }

    /// Stops accepting warnings (used when the request timed out).
    pub fn close(&self) {
        if let Ok(mut state) = self.inner.lock() {
            state.closed = true;
        }
    }

    /// The recorded `(agent, text)` pairs (deduplicated, before validation and truncation).
    pub fn warnings(&self) -> Vec<(String, String)> {
        self.inner
            .lock()
            .map(|s| s.warnings.clone())
            .unwrap_or_default()
    }

    /// The `Warning` header values to send, e.g. `299 - "text"`.
    pub fn header_values(&self) -> Vec<String> {
        self.inner
            .lock()
            .map(|s| s.headers.clone())
            .unwrap_or_default()
    }
}

/// `text` cut to at most `max` runes, and its rune count.
fn truncate(text: &str, max: usize) -> (String, usize) {
    let runes = text.chars().count();
    if runes <= max {
        (text.to_string(), runes)
    } else {
        (text.chars().take(max).collect(), max)
    }
}

/// Upstream `net.NewWarningHeader(299, agent, text)`: `299 <agent or -> "<text>"` with `"` and
/// `\` escaped; `None` if the agent contains whitespace or control characters, or the text
/// contains control characters.
pub fn warning_header(agent: &str, text: &str) -> Option<String> {
    let agent = if agent.is_empty() {
        "-"
    } else if agent.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    } else {
        agent
    };
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    Some(format!("299 {agent} {quoted}"))
}

/// Adds a warning to the request's recorder, if it has one.
pub fn add_warning(extensions: &http::Extensions, agent: &str, text: &str) {
    if let Some(recorder) = extensions.get::<Arc<WarningRecorder>>() {
        recorder.add(agent, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::type_complexity)] // a test table
    fn recorder_add_warning() {
        let cases: Vec<(&str, Vec<(&str, &str)>, Vec<&str>)> = vec![
            ("empty", vec![], vec![]),
            ("empty values", vec![("", "")], vec![]),
            (
                "empty agent",
                vec![("", "mytext")],
                vec![r#"299 - "mytext""#],
            ),
            (
                "simple",
                vec![("myagent", "mytext")],
                vec![r#"299 myagent "mytext""#],
            ),
            (
                "duplicate text",
                vec![("myagent", "mytext"), ("myagent2", "mytext")],
                vec![r#"299 myagent "mytext""#],
            ),
            (
                "multiple",
                vec![("", "mytext1"), ("", "mytext2"), ("", "mytext3")],
                vec![
                    r#"299 - "mytext1""#,
                    r#"299 - "mytext2""#,
                    r#"299 - "mytext3""#,
                ],
            ),
            ("invalid agent", vec![("my agent", "mytext")], vec![]),
            ("invalid text", vec![("myagent", "my\ntext")], vec![]),
            (
                "escaping",
                vec![("", r#"say "hi" \o/"#)],
                vec![r#"299 - "say \"hi\" \\o/""#],
            ),
        ];
        for (name, adds, expected) in cases {
            let recorder = WarningRecorder::new();
            for (agent, text) in adds {
                recorder.add(agent, text);
            }
            assert_eq!(recorder.header_values(), expected, "{name}");
        }
    }

    #[test]
    fn truncation() {
        let recorder = WarningRecorder::with_limits(12, 5);
        // Within budget: kept whole.
        recorder.add("", "aaaaaaaaaa");
        recorder.add("", "aaaaaaaaaa");
        assert_eq!(recorder.header_values(), vec![r#"299 - "aaaaaaaaaa""#]);
        // Exceeds the budget: everything rewritten, truncated to 5 runes.
        recorder.add("", "bbbbbbbbbbbbb");
        assert_eq!(
            recorder.header_values(),
            vec![r#"299 - "aaaaa""#, r#"299 - "bbbbb""#]
        );
        // Truncating with budget left: added, truncated on a rune boundary.
        recorder.add("", "Iñtërnâtiônàlizætiøn");
        assert_eq!(
            recorder.header_values(),
            vec![r#"299 - "aaaaa""#, r#"299 - "bbbbb""#, r#"299 - "Iñtër""#]
        );
        // Budget exhausted while truncating: dropped.
        recorder.add("", "cc");
        assert_eq!(recorder.header_values().len(), 3);
    }

    #[test]
    fn truncation_at_default_limits() {
        let recorder = WarningRecorder::new();
        let long = "x".repeat(4000);
        recorder.add("", &long);
        assert_eq!(recorder.header_values().len(), 1);
        recorder.add("", &"y".repeat(200));
        let headers = recorder.header_values();
        assert_eq!(headers.len(), 2);
        assert_eq!(headers[0], format!("299 - \"{}\"", "x".repeat(256)));
        assert_eq!(headers[1], format!("299 - \"{}\"", "y".repeat(200)));
    }

    #[test]
    fn closed_recorder_drops_warnings() {
        let recorder = WarningRecorder::new();
        recorder.add("", "a");
        recorder.close();
        recorder.add("", "b");
        assert_eq!(recorder.header_values(), vec![r#"299 - "a""#]);
    }
}

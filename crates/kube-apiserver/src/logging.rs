//! Logging with klog's `-v` levels: 0–3 info, 4–5 debug, 6+ trace, and klog's `V(n)` lines
//! (`apiserver::util::klog`) from `-v=n` on; `/debug/flags/v` changes the level at run time.

use std::io::IsTerminal;
use std::sync::Arc;

use apiserver::server::routes::flags::{FlagSetter, verbosity_setter};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::prelude::*;
use tracing_subscriber::reload;

fn filter_for(verbosity: i32) -> EnvFilter {
    let level = match verbosity {
        i32::MIN..=3 => "info",
        4..=5 => "debug",
        _ => "trace",
    };
    // Dependencies stay at info unless asked for trace, so -v=4 shows our own debug lines.
    let mut directives = vec![if verbosity >= 8 {
        level.to_string()
    } else {
        format!("info,apiserver={level},kube_apiserver={level}")
    }];
    // klog's V(n) lines (upstream's `[graceful-termination]` lines are V(1)).
    directives.extend(apiserver::util::klog::directives_for_verbosity(verbosity));
    EnvFilter::new(directives.join(","))
}

/// Installs the global subscriber (stderr) and returns the setter for `/debug/flags/v`.
pub fn init(verbosity: u8) -> FlagSetter {
    let (filter, handle) = reload::Layer::new(filter_for(i32::from(verbosity)));
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                // Colour codes only on a terminal: logs piped to files stay greppable.
                .with_ansi(std::io::stderr().is_terminal())
                .with_target(false),
        )
        .init();
    let handle = Arc::new(handle);
    verbosity_setter(move |level| {
        let _ = handle.reload(filter_for(level));
    })
}

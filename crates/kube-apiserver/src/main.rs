//! `kube-apiserver`: a Kubernetes API server on the `apiserver` library.

mod accepted_flags;
mod admission;
mod advertise;
mod apis;
mod auth;
mod bootstrap;
mod bootstrappolicy;
mod controllers;
mod encryption;
mod feature_gates;
mod features;
mod frontproxy;
mod informers;
mod install;
mod kubelet_client;
mod logging;
mod openapi;
mod options;
mod registry;
mod server;
mod serviceaccount;
mod webhook_resolver;

use clap::Parser;
use tokio_util::sync::CancellationToken;

fn main() {
    // SAFETY: no other thread exists yet (the runtime starts below). Upstream unsets
    // NOTIFY_SOCKET with its READY=1; here it leaves the environment now and READY=1 goes to
    // the address kept (apiserver::server::systemd).
    unsafe { apiserver::server::systemd::take_notify_socket_from_env() };
    let opts = match options::Options::try_parse() {
        Ok(opts) => opts,
        Err(err) => {
            use clap::error::ErrorKind;
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) {
                let _ = err.print();
                std::process::exit(0);
            }
            let rendered = err.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            eprintln!("Error: {}", first.trim_start_matches("error: "));
            std::process::exit(1);
        }
    };
    match opts.version {
        Some(options::VersionFlag::Print) => {
            println!("Kubernetes {}", server::KUBERNETES_VERSION);
            std::process::exit(0);
        }
        Some(options::VersionFlag::Raw) => {
            println!("{}", server::raw_version(&server::version_info()));
            std::process::exit(0);
        }
        Some(options::VersionFlag::Off) | None => {}
    }
    let errors = opts.validate();
    if !errors.is_empty() {
        eprintln!("Error: {}", errors.join("; "));
        std::process::exit(1);
    }
    let verbosity = logging::init(opts.verbosity);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("Error: starting the runtime: {err}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(async move {
        let stop = CancellationToken::new();
        tokio::spawn(handle_signals(stop.clone()));
        match server::run(opts, verbosity, stop).await {
            Ok(()) => 0,
            Err(err) => {
                eprintln!("Error: {err}");
                1
            }
        }
    });
    std::process::exit(code);
}

/// SIGTERM or SIGINT begins graceful termination; a second signal exits at once with code 1
/// (upstream `SetupSignalContext`).
async fn handle_signals(stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("unable to install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::info!("received a termination signal, shutting down gracefully");
    stop.cancel();
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    eprintln!("received a second termination signal, exiting");
    std::process::exit(1);
}

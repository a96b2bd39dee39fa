//! `kube-apiserver`: a Kubernetes API server on the `apiserver` library.

mod options;

use clap::Parser;

fn main() {
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
    let errors = opts.validate();
    if !errors.is_empty() {
        eprintln!("Error: {}", errors.join("; "));
        std::process::exit(1);
    }
}

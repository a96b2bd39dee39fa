//! Records the compiler version for `/version`'s `goVersion` field.

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|v| {
            // `rustc 1.95.0 (hash date)` → `rustc 1.95.0`.
            let mut words = v.split_whitespace();
            Some(format!("{} {}", words.next()?, words.next()?))
        })
        .unwrap_or_else(|| "rustc unknown".to_owned());
    println!("cargo:rustc-env=APISERVER_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
}

//! The webhook of `scripts/bench-admission.sh`: a hyper server behind tokio-rustls answering
//! AdmissionReview v1 requests, allowing each; on paths starting with `/mutate` the answer
//! carries a JSONPatch adding the label `mutated=yes`. Fast enough that the API server, not the
//! webhook, bounds the benchmark.
//!
//! Usage: `admission_webhook <cert.pem> <key.pem> [addr]` (addr defaults to `127.0.0.1:0`);
//! prints `webhook listening on <port>` once it accepts connections.

use std::convert::Infallible;
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn tls_config(cert: &str, key: &str) -> Result<rustls::ServerConfig, BoxError> {
    let certs = CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The AdmissionReview answer to `body` (the review's uid; a patch when `mutate`).
fn answer(body: &[u8], mutate: bool) -> Bytes {
    let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut response = json!({"uid": review["request"]["uid"], "allowed": true});
    if mutate {
        let patch = json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]);
        response["patchType"] = json!("JSONPatch");
        response["patch"] =
            json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    }
    Bytes::from(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
            .to_string(),
    )
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(cert), Some(key)) = (args.get(1), args.get(2)) else {
        return Err("usage: admission_webhook <cert.pem> <key.pem> [addr]".into());
    };
    let addr = args.get(3).map(String::as_str).unwrap_or("127.0.0.1:0");
    let acceptor = TlsAcceptor::from(Arc::new(tls_config(cert, key)?));
    let listener = TcpListener::bind(addr).await?;
    println!("webhook listening on {}", listener.local_addr()?.port());

    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                let mutate = req.uri().path().starts_with("/mutate");
                let body = match req.into_body().collect().await {
                    Ok(b) => b.to_bytes(),
                    Err(_) => Bytes::new(),
                };
                let mut resp = hyper::Response::new(Full::new(answer(&body, mutate)));
                resp.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static("application/json"),
                );
                Ok::<_, Infallible>(resp)
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

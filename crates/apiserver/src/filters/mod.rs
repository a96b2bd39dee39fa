//! The default handler chain: one filter per module, each a [`tower::Layer`], composed in
//! upstream order by [`chain`].
//!
//! A filter implements [`Filter`]: it receives the request and the rest of the chain
//! ([`Next`]) and produces the response. [`FilterLayer`] turns a filter into a tower layer.

pub mod audit;
pub mod audit_init;
pub mod body_guard;
pub mod cache_control;
pub mod chain;
pub mod cors;
pub mod goaway;
pub mod hsts;
pub mod httplog;
pub mod max_inflight;
pub mod mux_discovery_complete;
pub mod panic_recovery;
pub mod request_deadline;
pub mod request_info;
pub mod request_received;
pub mod retry_after;
pub mod shutdown_close;
pub mod timeout;
pub mod waitgroup;
pub mod warning;
pub mod watch_termination;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt;
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service};

use crate::body::{Request, Response};

pub mod authentication;
pub mod authn_metrics;
pub mod authorization;
pub mod impersonation;
pub mod latency;

/// A boxed, cloneable HTTP service: a handler, or a handler wrapped in filters.
pub type HttpService = BoxCloneSyncService<Request, Response, Infallible>;

/// A boxed response future.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Response> + Send + 'static>>;

/// The future of the rest of the chain ([`Next::run`]): the boxed service future, unwrapped
/// without a further allocation.
pub type NextFuture = futures::future::Map<
    Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'static>>,
    fn(Result<Response, Infallible>) -> Response,
>;

fn unwrap_infallible(result: Result<Response, Infallible>) -> Response {
    match result {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Builds an [`HttpService`] from an async function.
pub fn service_fn<F, Fut>(f: F) -> HttpService
where
    F: Fn(Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    BoxCloneSyncService::new(tower::service_fn(move |req: Request| {
        let fut = f(req);
        async move { Ok::<_, Infallible>(fut.await) }
    }))
}

/// The rest of the chain, as a filter sees it.
#[derive(Clone)]
pub struct Next(HttpService);

impl Next {
    /// Wraps a service.
    pub fn new(service: HttpService) -> Self {
        Next(service)
    }

    /// Passes the request on and returns the response.
    ///
    /// Returns a boxed future: an `async fn` here makes rustc fail to prove `Send` for filters'
    /// futures ("implementation of `Service` is not general enough", a known higher-ranked
    /// lifetime limitation with `dyn Error` request bodies).
    ///
    /// `poll_ready` is skipped: every service of the chain (filters, handlers, the mux) is
    /// always ready, and calling directly saves an allocation per layer.
    pub fn run(self, req: Request) -> NextFuture {
        let mut service = self.0;
        service
            .call(req)
            .map(unwrap_infallible as fn(Result<Response, Infallible>) -> Response)
    }
}

/// One filter of the handler chain.
pub trait Filter: Send + Sync + 'static {
    /// Handles `req`, calling `next` to continue down the chain (or not).
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static;
}

/// The tower [`Layer`] of a [`Filter`].
pub struct FilterLayer<F>(Arc<F>);

impl<F> FilterLayer<F> {
    /// Wraps a filter.
    pub fn new(filter: F) -> Self {
        FilterLayer(Arc::new(filter))
    }
}

impl<F> Clone for FilterLayer<F> {
    fn clone(&self) -> Self {
        FilterLayer(self.0.clone())
    }
}

impl<F: Filter> Layer<HttpService> for FilterLayer<F> {
    type Service = HttpService;

    fn layer(&self, inner: HttpService) -> HttpService {
        BoxCloneSyncService::new(FilterService {
            filter: self.0.clone(),
            next: Arc::new(inner),
        })
    }
}

/// A filter applied to the rest of the chain.
///
/// The rest of the chain sits behind an `Arc`, so cloning a `FilterService` (which a boxed
/// service does once per request) is shallow: cloning the boxed `next` then copies one layer,
/// not every layer below it (which made a request cost a quadratic number of allocations).
pub struct FilterService<F> {
    filter: Arc<F>,
    next: Arc<HttpService>,
}

impl<F> Clone for FilterService<F> {
    fn clone(&self) -> Self {
        FilterService {
            filter: self.filter.clone(),
            next: self.next.clone(),
        }
    }
}

impl<F: Filter> Service<Request> for FilterService<F> {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let fut = self.filter.call(req, Next(HttpService::clone(&self.next)));
        Box::pin(async move { Ok(fut.await) })
    }
}

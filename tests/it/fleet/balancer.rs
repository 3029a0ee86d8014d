//! A per-request round-robin load balancer, as the deploy's nginx is configured: every request
//! goes to the next worker, whatever went before (no sticky sessions), and a request whose
//! worker cannot be connected to goes to the one after (nginx's `proxy_next_upstream error`).
//! Bodies are streamed back as they come, so SSE streams pass through.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::header;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use futures_util::TryStreamExt as _;

/// Where requests went: which worker answered each, in order.
#[derive(Debug, Default)]
struct Routes {
    next: AtomicUsize,
    answered_by: Mutex<Vec<usize>>,
}

struct Upstreams {
    urls: Vec<String>,
    routes: Arc<Routes>,
    client: awc::Client,
}

/// A running balancer in front of some workers.
pub(crate) struct Balancer {
    pub(crate) url: String,
    routes: Arc<Routes>,
    server: ServerHandle,
}

impl Balancer {
    /// Starts a balancer on a free port in front of `workers` (base URLs), in the current
    /// actix System.
    pub(crate) fn start(workers: Vec<String>) -> Balancer {
        let routes = Arc::new(Routes::default());
        let shared = routes.clone();
        let server = HttpServer::new(move || {
            let upstreams = Upstreams {
                urls: workers.clone(),
                routes: shared.clone(),
                client: awc::Client::builder()
                    .disable_timeout()
                    .disable_redirects()
                    .finish(),
            };
            App::new()
                .app_data(web::Data::new(upstreams))
                .app_data(web::PayloadConfig::new(64 << 20))
                .default_service(web::to(forward))
        })
        .workers(2)
        .bind("127.0.0.1:0")
        .expect("the balancer binds");
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Balancer {
            url: format!("http://{addr}"),
            routes,
            server: handle,
        }
    }

    /// Which worker (by index) answered each request so far.
    pub(crate) fn answered_by(&self) -> Vec<usize> {
        self.routes.answered_by.lock().expect("routes").clone()
    }

    pub(crate) async fn stop(self) {
        self.server.stop(false).await;
    }
}

/// Headers that describe one hop's connection, not the message: never forwarded.
fn hop_by_hop(name: &header::HeaderName) -> bool {
    [
        header::CONNECTION,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::TE,
        header::TRAILER,
    ]
    .contains(name)
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

async fn forward(
    req: HttpRequest,
    body: web::Bytes,
    upstreams: web::Data<Upstreams>,
) -> HttpResponse {
    let n = upstreams.urls.len();
    for _ in 0..n {
        let index = upstreams.routes.next.fetch_add(1, Ordering::Relaxed) % n;
        let url = format!("{}{}", upstreams.urls[index], req.uri());
        let mut upstream = upstreams.client.request(req.method().clone(), url);
        for (name, value) in req.headers() {
            if !hop_by_hop(name) {
                upstream = upstream.append_header((name.clone(), value.clone()));
            }
        }
        match upstream
            .timeout(Duration::from_secs(600))
            .send_body(body.clone())
            .await
        {
            Ok(response) => {
                upstreams
                    .routes
                    .answered_by
                    .lock()
                    .expect("routes")
                    .push(index);
                let mut out = HttpResponse::build(response.status());
                for (name, value) in response.headers() {
                    if !hop_by_hop(name) {
                        out.append_header((name.clone(), value.clone()));
                    }
                }
                return out.streaming(response.map_err(actix_web::error::ErrorBadGateway));
            }
            // The worker is gone: the next one gets the request.
            Err(awc::error::SendRequestError::Connect(_)) => continue,
            Err(e) => return HttpResponse::BadGateway().body(e.to_string()),
        }
    }
    HttpResponse::BadGateway().body("no worker answers")
}

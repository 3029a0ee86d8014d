//! Criterion benches of the per-request pieces, each alone: envelope parse and validation,
//! the capability gate, sealing and opening a state, the argument digest, and the API-key
//! lookup that authenticates every request of an API-key tenant.
//!
//! `cargo bench --bench pieces`. Figures and the machine: BENCHMARKS.md.

use std::hint::black_box;
use std::time::SystemTime;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use roundtrip_runtime::dispatch::envelope::{self, HeaderText, HttpCheck, HttpHeaders};
use roundtrip_runtime::dispatch::gate;
use roundtrip_runtime::handler::{Catalog, Tenant};
use roundtrip_runtime::protocol::input::{InputRequest, InputRequests};
use roundtrip_runtime::protocol::{ClientCapabilities, Incoming};
use roundtrip_runtime::sealing::{self, args_digest, Binding, KeyRing, SealPolicy, StateKey};
use roundtrip_runtime::tenancy::Authenticator;
use roundtrip_tenants::{ApiKey, AuthMode, Slug, TenantRegistry, TenantSpec};
use serde_json::{json, Value};

/// The body `roundtrip bench --mode call` sends.
const ECHO_BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#;

fn envelope(c: &mut Criterion) {
    let catalog = roundtrip::catalogs::build(&["examples".into()]).expect("examples catalog");
    let headers = HttpHeaders {
        protocol_version: Some(HeaderText::Text("2026-07-28")),
        method: Some(HeaderText::Text("tools/call")),
        name: Some(HeaderText::Text("echo")),
        params: Vec::new(),
    };
    c.bench_function("envelope/parse_and_check", |b| {
        b.iter(|| {
            let Ok(Incoming::Request(request)) = Incoming::parse(black_box(ECHO_BODY)) else {
                panic!("the echo body is a request")
            };
            let checked = envelope::check_modern(
                &request,
                Some(HttpCheck {
                    headers: &headers,
                    catalog: &catalog,
                }),
            );
            black_box((checked.is_ok(), request))
        })
    });
}

fn gate(c: &mut Criterion) {
    let mut requests = InputRequests::new();
    requests.insert(
        "user_name".into(),
        InputRequest::elicit_form("What is your name?", json!({"type": "object"})),
    );
    requests.insert("roots".into(), InputRequest::list_roots());
    let declared = ClientCapabilities::new(
        json!({"elicitation": {}, "roots": {}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let bare = ClientCapabilities::default();
    c.bench_function("gate/declared", |b| {
        b.iter(|| gate::missing_capabilities(black_box(&requests), black_box(&declared)))
    });
    c.bench_function("gate/missing", |b| {
        b.iter(|| gate::missing_capabilities(black_box(&requests), black_box(&bare)))
    });
}

fn seal_open(c: &mut Criterion) {
    let ring = KeyRing::new(StateKey::generate());
    let policy = SealPolicy::default();
    let args = json!({"text": "hello"});
    let binding = Binding {
        tenant: "demo",
        principal: "key:bench",
        method: "tools/call",
        target: "greet",
        args_digest: args_digest(Some(&args)),
    };
    let mut group = c.benchmark_group("seal_open");
    // 64 B: a typical flow's small state, where the per-call cost of the cipher shows; 1 KiB
    // is the target's size.
    for size in [64usize, 1024, 16 * 1024] {
        // Plain text: what a handler typically carries (no JSON escaping to inflate it).
        let state = "s".repeat(size);
        let label = if size < 1024 {
            format!("{size}B")
        } else {
            format!("{}KiB", size / 1024)
        };
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::new("seal+open", &label), &state, |b, state| {
            b.iter(|| {
                let now = SystemTime::now();
                let token =
                    sealing::seal(&ring, &policy, &binding, &payload(state), now).expect("sealed");
                let claims =
                    sealing::open(&ring, &policy, &binding, black_box(&token), now).expect("open");
                black_box(claims)
            })
        });
        let token = sealing::seal(
            &ring,
            &policy,
            &binding,
            &payload(&state),
            SystemTime::now(),
        )
        .expect("sealed");
        group.bench_with_input(BenchmarkId::new("seal", &label), &state, |b, state| {
            b.iter(|| {
                sealing::seal(
                    &ring,
                    &policy,
                    &binding,
                    &payload(black_box(state)),
                    SystemTime::now(),
                )
            })
        });
        group.bench_with_input(BenchmarkId::new("open", &label), &token, |b, token| {
            b.iter(|| {
                sealing::open(
                    &ring,
                    &policy,
                    &binding,
                    black_box(token),
                    SystemTime::now(),
                )
            })
        });
    }
    group.finish();
}

/// Round 1's handler state, with no answer schemas.
fn payload(state: &str) -> sealing::Payload<'_> {
    sealing::Payload {
        round: 1,
        state: Some(state),
        answer_schemas: &[],
    }
}

fn digest(c: &mut Criterion) {
    let small = json!({"text": "hello"});
    // A larger tool call: nested objects, an array, keys out of order at one level.
    let mut large = serde_json::Map::new();
    for i in 0..32 {
        large.insert(
            format!("field_{i:02}"),
            json!({"z": i, "a": [1, 2, 3], "name": format!("value {i}")}),
        );
    }
    let large = Value::Object(large);
    c.bench_function("args_digest/small", |b| {
        b.iter(|| args_digest(Some(black_box(&small))))
    });
    c.bench_function("args_digest/32_fields", |b| {
        b.iter(|| args_digest(Some(black_box(&large))))
    });
}

/// The presented key is hashed once and compared, in constant time, with every key of the
/// tenant: the cost grows with the tenant's key count, so one key and a hundred are measured.
fn api_key_lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("api_key_lookup");
    for keys in [1usize, 100] {
        let registry = TenantRegistry::new();
        let spec = TenantSpec {
            slug: Slug::parse("acme").expect("a valid slug"),
            name: "Acme".into(),
            auth: AuthMode::ApiKey,
            catalogs: Vec::new(),
        };
        registry
            .insert(spec, Tenant::new("acme", Catalog::builder().build()))
            .expect("a new tenant");
        let issued: Vec<ApiKey> = (0..keys)
            .map(|i| ApiKey::generate(format!("k{i}")))
            .collect();
        for key in &issued {
            registry.add_key("acme", key.record());
        }
        let tenant = Tenant::new("acme", Catalog::builder().build());
        // The last key issued: with a linear scan, the worst place for it to be.
        let presented = issued.last().expect("at least one key").secret.clone();
        group.bench_with_input(
            BenchmarkId::new("keys", keys),
            &presented,
            |b, presented| {
                b.iter(|| {
                    registry
                        .authenticate(black_box(&tenant), Some(black_box(presented)))
                        .expect("the key authenticates")
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, envelope, gate, seal_open, digest, api_key_lookup);
criterion_main!(benches);

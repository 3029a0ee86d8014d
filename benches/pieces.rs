//! Criterion benches of the per-request pieces, each alone: envelope parse and validation,
//! the body's parse beside a typed parse of the same body (the headroom of reading `params`
//! into typed, borrowed fields), the capability gate, sealing and opening a state, the
//! argument digest, and the API-key lookup that authenticates every request of an API-key
//! tenant.
//!
//! `cargo bench --bench pieces`. Figures and the machine: BENCHMARKS.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::SystemTime;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use roundtrip_runtime::dispatch::envelope::{self, HeaderText, HttpCheck, HttpHeaders};
use roundtrip_runtime::dispatch::gate;
use roundtrip_runtime::protocol::input::{InputRequest, InputRequests};
use roundtrip_runtime::protocol::{ClientCapabilities, Incoming};
use roundtrip_runtime::sealing::{self, args_digest, Binding, KeyRing, SealPolicy, StateKey};
use roundtrip_runtime::tenancy::{Allow, Authenticator, Grants, Principal, TenantDirectory};
use roundtrip_tenants::{ApiKey, AuthMode, Slug, SqlStore, Store, TenantRegistry, TenantSpec};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The body `roundtrip bench --mode call` sends.
const ECHO_BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#;

fn envelope(c: &mut Criterion) {
    let catalog = roundtrip::catalogs::build(&["examples".into()]).expect("examples catalog");
    let headers = HttpHeaders {
        protocol_version: Some(HeaderText::Text("2026-07-28")),
        method: Some(HeaderText::Text("tools/call")),
        name: Some(HeaderText::Text("echo")),
        ..HttpHeaders::default()
    };
    c.bench_function("envelope/parse_and_check", |b| {
        b.iter(|| {
            let Ok(Incoming::Request(mut request)) = Incoming::parse(black_box(ECHO_BODY)) else {
                panic!("the echo body is a request")
            };
            let checked = envelope::check_modern(
                &mut request,
                Some(HttpCheck {
                    headers: &headers,
                    catalog: &catalog,
                }),
            );
            black_box((checked.is_ok(), request))
        })
    });
}

/// The echo body read into borrowed, typed fields, as a parse that built no map for `params`
/// and no owned string for its names would: the floor `Incoming::parse` is measured against.
/// `arguments` stays JSON (handlers read arguments as JSON); the declared capabilities are
/// skipped, where `Incoming::parse` reads them into bits, so the floor is, if anything, low.
/// Its fields are read by serde and then only dropped (`dead_code` allowed for that).
#[derive(Deserialize)]
#[allow(dead_code)]
struct TypedCall<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: &'a str,
    #[serde(borrow)]
    params: TypedParams<'a>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct TypedParams<'a> {
    name: &'a str,
    arguments: Option<Value>,
    #[serde(rename = "_meta", borrow)]
    meta: TypedMeta<'a>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct TypedMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: serde::de::IgnoredAny,
}

fn parse(c: &mut Criterion) {
    // Both time a successful parse, not an error path.
    assert!(matches!(
        Incoming::parse(ECHO_BODY),
        Ok(Incoming::Request(_))
    ));
    assert!(serde_json::from_slice::<TypedCall<'_>>(ECHO_BODY).is_ok());
    let mut group = c.benchmark_group("parse");
    group.bench_function("incoming", |b| {
        b.iter(|| Incoming::parse(black_box(ECHO_BODY)).is_ok())
    });
    group.bench_function("typed_floor", |b| {
        b.iter(|| serde_json::from_slice::<TypedCall<'_>>(black_box(ECHO_BODY)).is_ok())
    });
    group.finish();
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

/// The key lookup that authenticates every request of an API-key tenant, as the server does
/// it: the registry loaded from a real store (SQLite in a temporary directory) holding one,
/// a hundred and a hundred thousand keys. The presented key is hashed once and looked up by
/// its digest, then confirmed in constant time, so the count should not show.
fn api_key_lookup(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("api_key_lookup");
    for keys in [1usize, 100, 100_000] {
        let dir = std::env::temp_dir().join(format!(
            "roundtrip-bench-keys-{}-{keys}",
            std::process::id()
        ));
        let (registry, presented) = runtime.block_on(registry_with_keys(&dir, keys));
        let tenant = registry.tenant("acme").expect("the tenant");
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
        let _ = std::fs::remove_dir_all(&dir);
    }
    group.finish();
}

/// A registry over a new store in `dir` whose tenant `acme` has `keys` keys; the secret of
/// the last one issued.
async fn registry_with_keys(dir: &std::path::Path, keys: usize) -> (TenantRegistry, String) {
    let store = SqlStore::open(&format!("sqlite://{}/store.db", dir.display()))
        .await
        .expect("the store opens");
    let spec = TenantSpec::new("Acme", vec!["examples".into()], AuthMode::ApiKey);
    store
        .create_tenant(&Slug::parse("acme").expect("a valid slug"), &spec)
        .await
        .expect("a new tenant");
    let mut last = None;
    for i in 0..keys {
        let key = ApiKey::generate(format!("k{i}"));
        store
            .create_key("acme", &key.record())
            .await
            .expect("a key");
        last = Some(key.secret);
    }
    let registry = TenantRegistry::new(Arc::new(store), Arc::new(roundtrip::catalogs::Compiled));
    registry.load().await.expect("the registry loads");
    (registry, last.expect("at least one key"))
}

/// What a grant costs a request: the catalog a principal sees, the whole one for an
/// all-access key, the cached restricted one for a limited key.
fn grants(c: &mut Criterion) {
    let catalog = roundtrip::catalogs::build(&["examples".into()]).expect("examples catalog");
    let tenant = roundtrip_runtime::handler::Tenant::new("acme", catalog);
    let all = Principal::new("key:all");
    let limited = Principal::with_grants(
        "key:limited",
        Grants::only(Allow::default().tools(["echo"])),
    );
    let view = tenant.view();
    view.catalog_for(&limited);
    let mut group = c.benchmark_group("catalog_for");
    group.bench_function("all_access", |b| {
        b.iter(|| view.catalog_for(black_box(&all)))
    });
    group.bench_function("limited_cached", |b| {
        b.iter(|| view.catalog_for(black_box(&limited)))
    });
    group.finish();
}

criterion_group!(
    benches,
    envelope,
    parse,
    gate,
    seal_open,
    digest,
    api_key_lookup,
    grants
);
criterion_main!(benches);

//! A fleet, as deployed: three `roundtrip serve` processes on one PostgreSQL schema and one
//! Redis, behind a per-request round-robin balancer, with no sticky sessions. Every round of
//! a call may land on another worker, and none of them may lose a flow: not when the rounds
//! alternate workers, not when a key is rotated mid-traffic, not when a worker is killed, not
//! when Redis restarts. A legacy session's requests that land on another worker than the
//! one holding it are forwarded there, the shim's answers included.

mod balancer;
mod clients;
mod legacy_flow;
mod workers;

use std::time::Duration;

use roundtrip_runtime::sealing::kid_of;
use serde_json::{json, Value};

use self::balancer::Balancer;
use self::legacy_flow::LegacyFlow;
use self::workers::{FleetSettings, ADMIN_TOKEN, DEMO_KEY};
use crate::support::serve_process::Serve;
use crate::support::{accept, mcp_headers, retry, rpc, tool_call};
use roundtrip_runtime::redis::testing::SpareRedis;

/// The machine's Redis (CI starts it).
const REDIS: &str = "redis://127.0.0.1:6379";

/// A fleet of `n` workers behind a balancer.
struct Fleet {
    workers: Vec<Option<Serve>>,
    balancer: Balancer,
}

impl Fleet {
    async fn start(settings: &FleetSettings, n: usize) -> Fleet {
        let workers = settings.start(n);
        let balancer = Balancer::start(workers.iter().map(|w| w.url.clone()).collect());
        Fleet {
            workers: workers.into_iter().map(Some).collect(),
            balancer,
        }
    }

    /// Kills worker `index` at once, as a crash would.
    fn kill(&mut self, index: usize) {
        if let Some(worker) = self.workers[index].take() {
            worker.kill();
        }
    }

    async fn stop(self) {
        self.balancer.stop().await;
        for worker in self.workers.into_iter().flatten() {
            worker.stop();
        }
    }
}

fn client() -> awc::Client {
    awc::Client::builder()
        .timeout(Duration::from_secs(20))
        .finish()
}

/// POSTs `body` to the demo tenant through the balancer; the JSON-RPC reply.
async fn call(fleet: &Fleet, body: &Value) -> Value {
    let mut req = client()
        .post(format!("{}/t/demo/mcp", fleet.balancer.url))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("authorization", format!("Bearer {DEMO_KEY}")));
    for (name, value) in mcp_headers(Some(body)) {
        req = req.insert_header((name, value));
    }
    let mut resp = req.send_json(body).await.expect("the balancer answers");
    let bytes = resp.body().limit(1 << 20).await.expect("a reply body");
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("a JSON reply, not {}", String::from_utf8_lossy(&bytes)))
}

/// One whole `greet` flow, two rounds, each sent through the balancer: whether it completed
/// with the answer given, and the reply that says why not.
async fn greet_flow(fleet: &Fleet, id: u64) -> Result<(), Value> {
    let first = tool_call(id, "greet", json!({}), json!({"elicitation": {}}));
    let reply = call(fleet, &first).await;
    let Some(state) = reply["result"]["requestState"].as_str() else {
        return Err(reply);
    };
    let answers = json!({"user_name": accept(json!({"name": format!("Ada {id}")}))});
    let done = call(fleet, &retry(&first, id + 1, answers, Some(state))).await;
    if done["result"]["content"][0]["text"] == format!("Hello, Ada {id}!") {
        Ok(())
    } else {
        Err(done)
    }
}

/// Sends `tools/list` to the demo tenant through the balancer; the HTTP status.
async fn list_tools(fleet: &Fleet) -> u16 {
    let body = rpc(1, "tools/list", json!({}));
    let mut req = client()
        .post(format!("{}/t/demo/mcp", fleet.balancer.url))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("authorization", format!("Bearer {DEMO_KEY}")));
    for (name, value) in mcp_headers(Some(&body)) {
        req = req.insert_header((name, value));
    }
    let resp = req.send_json(&body).await.expect("the balancer answers");
    resp.status().as_u16()
}

/// Rotates the demo tenant's requestState key through the balancer, retrying for up to 10 s
/// while the fleet answers 503 (its key share is not back yet); the new kid.
async fn rotate_once_redis_is_back(fleet: &Fleet) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let resp = client()
            .post(format!(
                "{}/admin/v1/tenants/demo/state-keys/rotate",
                fleet.balancer.url
            ))
            .insert_header(("authorization", format!("Bearer {ADMIN_TOKEN}")))
            .send()
            .await
            .expect("the balancer answers");
        if resp.status() != 503 || std::time::Instant::now() > deadline {
            drop(resp);
            return rotate(fleet).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Rotates the demo tenant's requestState key through the balancer; the new kid.
async fn rotate(fleet: &Fleet) -> String {
    let mut resp = client()
        .post(format!(
            "{}/admin/v1/tenants/demo/state-keys/rotate",
            fleet.balancer.url
        ))
        .insert_header(("authorization", format!("Bearer {ADMIN_TOKEN}")))
        .send()
        .await
        .expect("the balancer answers");
    let body: Value = resp.json().await.expect("a JSON body");
    assert!(resp.status().is_success(), "{body}");
    body["kid"].as_str().expect("the new kid").to_owned()
}

#[actix_web::test]
async fn modern_flows_whose_rounds_land_on_different_workers_complete() {
    let settings = FleetSettings::new(REDIS).await;
    let fleet = Fleet::start(&settings, 3).await;
    for id in (0..30).map(|i| i * 2 + 1) {
        greet_flow(&fleet, id).await.expect("the flow completes");
    }
    // Round-robin: each flow's two rounds went to two different workers.
    let routes = fleet.balancer.answered_by();
    assert_eq!(routes.len(), 60);
    assert!(
        routes.chunks(2).all(|pair| pair[0] != pair[1]),
        "{routes:?}"
    );
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn a_key_rotation_in_the_middle_of_traffic_loses_no_flow() {
    let settings = FleetSettings::new(REDIS).await;
    let fleet = Fleet::start(&settings, 3).await;
    let traffic = async {
        let flows = (0..40).map(|i| greet_flow(&fleet, i * 2 + 1));
        futures_util::future::join_all(flows).await
    };
    let rotations = async {
        let mut kids = Vec::new();
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            kids.push(rotate(&fleet).await);
        }
        kids
    };
    let (outcomes, kids) = futures_util::future::join(traffic, rotations).await;
    let lost: Vec<_> = outcomes.into_iter().filter_map(Result::err).collect();
    assert!(lost.is_empty(), "flows lost: {lost:?}");
    // A rotation asked while one is under way names the key already published.
    assert!(kids.iter().all(|kid| *kid == kids[0]), "{kids:?}");
    // Once the published key seals (2 s on), flows under it still cross workers.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let first = tool_call(9_001, "greet", json!({}), json!({"elicitation": {}}));
        let state = call(&fleet, &first).await["result"]["requestState"]
            .as_str()
            .map(str::to_owned)
            .expect("a sealed state");
        if kid_of(&state) == Some(kids[0].as_str()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new key never sealed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(flows(&fleet, 1_001, 10).await, Vec::<Value>::new());
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn killing_a_worker_mid_traffic_loses_no_modern_flow() {
    let settings = FleetSettings::new(REDIS).await;
    let mut fleet = Fleet::start(&settings, 3).await;
    for id in (0..10).map(|i| i * 2 + 1) {
        greet_flow(&fleet, id).await.expect("the flow completes");
    }
    // A first round answered by worker 1, whose retry must now go elsewhere.
    fleet.kill(1);
    for id in (10..40).map(|i| i * 2 + 1) {
        greet_flow(&fleet, id)
            .await
            .expect("the flow completes on the workers left");
    }
    fleet.stop().await;
    settings.remove().await;
}

/// Runs `n` greet flows from `first_id` one after another; the replies of those lost.
async fn flows(fleet: &Fleet, first_id: u64, n: u64) -> Vec<Value> {
    let mut lost = Vec::new();
    for id in (0..n).map(|i| first_id + i * 2) {
        if let Err(reply) = greet_flow(fleet, id).await {
            lost.push(reply);
        }
    }
    lost
}

#[actix_web::test]
async fn restarting_redis_mid_traffic_fails_no_modern_flow() {
    let redis = SpareRedis::start();
    let settings = FleetSettings::new(&redis.url()).await;
    let fleet = Fleet::start(&settings, 3).await;
    assert_eq!(flows(&fleet, 1, 5).await, Vec::<Value>::new());

    let port = redis.stop();
    assert_eq!(
        flows(&fleet, 101, 10).await,
        Vec::<Value>::new(),
        "while Redis is down"
    );
    let _redis = SpareRedis::start_on(port);
    assert_eq!(
        flows(&fleet, 201, 10).await,
        Vec::<Value>::new(),
        "once Redis is back"
    );

    // Redis came back empty. A rotation stores the ring again, every worker gets the new key,
    // and flows still cross workers.
    rotate_once_redis_is_back(&fleet).await;
    assert_eq!(
        flows(&fleet, 301, 10).await,
        Vec::<Value>::new(),
        "after a rotation"
    );
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn a_rate_limit_holds_for_the_fleet_not_per_worker() {
    let settings = FleetSettings::new(REDIS).await;
    let fleet = Fleet::start(&settings, 3).await;
    let mut resp = client()
        .patch(format!("{}/admin/v1/tenants/demo", fleet.balancer.url))
        .insert_header(("authorization", format!("Bearer {ADMIN_TOKEN}")))
        .send_json(&json!({"rate_limits": {"tenant": {"per_second": 0.001, "burst": 5}}}))
        .await
        .expect("the balancer answers");
    assert_eq!(resp.status(), 200, "{:?}", resp.body().await);
    // Every worker follows the store's changes, every 100 ms in these tests.
    tokio::time::sleep(Duration::from_millis(1_000)).await;

    let mut statuses = Vec::new();
    for _ in 0..15 {
        statuses.push(list_tools(&fleet).await);
    }
    let admitted = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((admitted, refused), (5, 10), "{statuses:?}");
    // The 15 requests went round robin over all three workers.
    let routes = fleet.balancer.answered_by();
    assert!((0..3).all(|w| routes.iter().rev().take(15).any(|r| *r == w)));
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn legacy_shim_flows_whose_requests_and_answers_land_on_other_workers_complete() {
    let settings = FleetSettings::new(REDIS).await;
    let fleet = Fleet::start(&settings, 3).await;
    for n in 0..3 {
        let session = LegacyFlow::begin(&fleet.balancer.url).await;
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "greet", "arguments": {}}});
        let (status, mut events) = session.post(&call).await;
        assert_eq!(status, 200);
        let leg = events.next().await.expect("the shim's elicitation");
        assert_eq!(leg["method"], "elicitation/create", "{leg}");
        let answer = json!({"jsonrpc": "2.0", "id": leg["id"],
            "result": {"action": "accept", "content": {"name": format!("Ada {n}")}}});
        let (answered, _) = session.post(&answer).await;
        assert_eq!(answered, 202);
        let done = events.next().await.expect("the call's result");
        assert_eq!(
            done["result"]["content"][0]["text"],
            format!("Hello, Ada {n}!"),
            "{done}"
        );
        assert_eq!(session.delete().await, 200);
        let (gone, _) = session
            .post_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            .await;
        assert_eq!(gone, 404);
    }
    // The sessions' requests went round robin over all three workers, so most of each
    // session's landed off its owner: the forwards were needed.
    let routes = fleet.balancer.answered_by();
    assert!((0..3).all(|w| routes.contains(&w)), "{routes:?}");
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn a_shim_answer_is_taken_once_whichever_workers_its_copies_land_on() {
    let settings = FleetSettings::new(REDIS).await;
    let fleet = Fleet::start(&settings, 3).await;
    let session = LegacyFlow::begin(&fleet.balancer.url).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "greet", "arguments": {}}});
    let (_, mut events) = session.post(&call).await;
    let leg = events.next().await.expect("the shim's elicitation");
    let answer = |name: &str| {
        json!({"jsonrpc": "2.0", "id": leg["id"],
            "result": {"action": "accept", "content": {"name": name}}})
    };
    let (first, _) = session.post_json(&answer("Ada")).await;
    let (second, again) = session.post_json(&answer("Grace")).await;
    assert_eq!((first, second), (202, 400), "{again}");
    let done = events.next().await.expect("the call's result");
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );
    // The answers landed on two workers, and at most one of them holds the session.
    let routes = fleet.balancer.answered_by();
    let answers = &routes[routes.len() - 2..];
    assert_ne!(answers[0], answers[1], "{routes:?}");
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn a_forwarded_request_is_counted_against_its_clients_address_not_the_forwarders() {
    let mut settings = FleetSettings::new(REDIS).await;
    settings.set("ROUNDTRIP_STREAMS__MAX_LISTEN_PER_CALLER", "1");
    let fleet = Fleet::start(&settings, 2).await;
    let url = |i: usize| fleet.workers[i].as_ref().expect("running").url.clone();
    let (owner, other) = (url(0), url(1));
    clients::create_open_tenant(&owner).await;
    clients::wait_until_served(&other).await;
    // A session held by the first worker; its id sent to the second is forwarded.
    let session = clients::initialize_from(&owner, "127.0.0.2").await;
    let (first, _held) = clients::listen_from(&other, "127.0.0.2", &session).await;
    assert_eq!(first, 200);
    // Another address is another anonymous caller, with a listen stream of its own...
    let (second, _also_held) = clients::listen_from(&other, "127.0.0.3", &session).await;
    assert_eq!(second, 200, "counted as the forwarding worker's address");
    // ...and the first one is at its cap.
    let (again, _) = clients::listen_from(&other, "127.0.0.2", &session).await;
    assert_eq!(again, 429);
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn a_caller_holds_its_legacy_session_cap_across_the_fleet_not_per_worker() {
    let mut settings = FleetSettings::new(REDIS).await;
    settings.set("ROUNDTRIP_LEGACY__MAX_SESSIONS_PER_CALLER", "2");
    let fleet = Fleet::start(&settings, 3).await;
    let first = LegacyFlow::begin(&fleet.balancer.url).await;
    let _second = LegacyFlow::begin(&fleet.balancer.url).await;
    // Round robin sends the third `initialize` to a worker that holds none of the caller's
    // sessions: only the fleet's count refuses it.
    let (status, refused) = LegacyFlow::try_begin(&fleet.balancer.url).await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], -31503, "{refused}");
    // Each `begin` was `initialize` and `notifications/initialized`.
    let routes = fleet.balancer.answered_by();
    let initializes = [routes[0], routes[2], routes[4]];
    assert!(
        initializes[2] != initializes[0] && initializes[2] != initializes[1],
        "the refused handshake landed on a worker holding none of the caller's sessions: {routes:?}"
    );
    // Ending a session, on any worker, frees its slot for the next.
    assert_eq!(first.delete().await, 200);
    let _third = LegacyFlow::begin(&fleet.balancer.url).await;
    fleet.stop().await;
    settings.remove().await;
}

#[actix_web::test]
async fn a_legacy_session_whose_worker_died_gets_404_on_every_other_worker() {
    let settings = FleetSettings::new(REDIS).await;
    let mut fleet = Fleet::start(&settings, 3).await;
    let session = LegacyFlow::begin(&fleet.balancer.url).await;
    let owner = fleet.balancer.answered_by()[0];
    fleet.kill(owner);
    for _ in 0..3 {
        let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
        let (status, reply) = session.post_json(&ping).await;
        assert_eq!(status, 404, "{reply}");
        assert_eq!(reply["error"]["code"], -31005, "{reply}");
    }
    // The others found the session in the directory and could not reach its owner.
    let mut gone = 0;
    for worker in fleet.workers.iter().flatten() {
        let mut resp = client()
            .get(format!("{}/metrics", worker.url))
            .send()
            .await
            .expect("a worker answers");
        let text = String::from_utf8_lossy(&resp.body().await.expect("metrics")).into_owned();
        gone += text
            .lines()
            .find_map(|l| {
                l.strip_prefix("roundtrip_legacy_forwards_total{outcome=\"owner_gone\"} ")
            })
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    assert!(gone >= 1, "no forward met the dead owner");
    fleet.stop().await;
    settings.remove().await;
}

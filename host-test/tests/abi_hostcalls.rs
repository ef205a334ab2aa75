//! The proxy-wasm hostcall layer over plain memory: argument and pointer validation, CAS
//! semantics, header-map wire form, buffers, properties, logs, metrics and WASI stubs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use toolseal::abi::buffers::{self, ConfigPhase};
use toolseal::abi::control;
use toolseal::abi::guest::{Fail, Guest, Trap, checked_range};
use toolseal::abi::header_map::{HeaderMap, PairsError, deserialize_pairs, serialize_pairs};
use toolseal::abi::http_call::{self, CallAnswer};
use toolseal::abi::maps;
use toolseal::abi::metrics;
use toolseal::abi::properties;
use toolseal::abi::shared;
use toolseal::abi::state::{HostState, StreamState};
use toolseal::abi::types::{LogLevel, Status};
use toolseal::abi::wasi;

const OK: u32 = Status::Ok as u32;
const NOT_FOUND: u32 = Status::NotFound as u32;
const BAD_ARGUMENT: u32 = Status::BadArgument as u32;
const BAD_MEMORY: u32 = Status::InvalidMemoryAccess as u32;
const CAS_MISMATCH: u32 = Status::CasMismatch as u32;

/// A guest with 64 KiB of memory and a bump allocator starting at 32 KiB.
struct FakeGuest {
    memory: Vec<u8>,
    next: u32,
    host: HostState,
    allocations: u32,
}

impl FakeGuest {
    fn new() -> Self {
        FakeGuest {
            memory: vec![0; 65536],
            next: 32768,
            host: HostState::default(),
            allocations: 0,
        }
    }

    /// Places `bytes` at `at` and returns `(at, len)`.
    fn put(&mut self, at: u32, bytes: &[u8]) -> (u32, u32) {
        self.memory[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        (at, bytes.len() as u32)
    }

    fn u32_at(&self, at: u32) -> u32 {
        u32::from_le_bytes(
            self.memory[at as usize..at as usize + 4]
                .try_into()
                .unwrap(),
        )
    }

    /// The bytes a hostcall returned through `(ptr_ptr, size_ptr)`.
    fn returned(&self, ptr_ptr: u32, size_ptr: u32) -> Vec<u8> {
        let (ptr, len) = (
            self.u32_at(ptr_ptr) as usize,
            self.u32_at(size_ptr) as usize,
        );
        self.memory[ptr..ptr + len].to_vec()
    }

    fn with_stream(mut self) -> Self {
        self.host.stream = Some(StreamState {
            context_id: 2,
            request_headers: HeaderMap::from_pairs([
                (":method", "POST"),
                ("Content-Type", "application/json"),
            ]),
            ..StreamState::default()
        });
        self
    }
}

impl Guest for FakeGuest {
    fn host(&mut self) -> &mut HostState {
        &mut self.host
    }
    fn read(&mut self, ptr: u32, len: u32) -> Result<Vec<u8>, Fail> {
        let range = checked_range(ptr, len, self.memory.len())?;
        Ok(self.memory[range].to_vec())
    }
    fn write(&mut self, ptr: u32, bytes: &[u8]) -> Result<(), Fail> {
        let range = checked_range(ptr, bytes.len() as u32, self.memory.len())?;
        self.memory[range].copy_from_slice(bytes);
        Ok(())
    }
    fn allocate(&mut self, size: u32) -> Result<u32, Fail> {
        self.allocations += 1;
        let at = self.next;
        checked_range(at, size, self.memory.len())?;
        self.next += size.max(1);
        Ok(at)
    }
}

// Out-pointer slots used by the tests.
const PTR: u32 = 100;
const SIZE: u32 = 104;
const CAS: u32 = 108;

#[test]
fn checked_range_refuses_out_of_bounds_and_wrapping_ranges() {
    assert_eq!(checked_range(10, 20, 30), Ok(10..30));
    assert_eq!(checked_range(30, 0, 30), Ok(30..30));
    assert_eq!(
        checked_range(10, 21, 30),
        Err(Fail::Status(Status::InvalidMemoryAccess))
    );
    assert_eq!(
        checked_range(u32::MAX, 2, usize::MAX),
        Ok(u32::MAX as usize..u32::MAX as usize + 2)
    );
    assert_eq!(
        checked_range(31, 0, 30),
        Err(Fail::Status(Status::InvalidMemoryAccess))
    );
}

#[test]
fn bad_guest_pointers_return_invalid_memory_access_without_side_effects() {
    let mut g = FakeGuest::new().with_stream();
    // Key pointer past the end of memory.
    assert_eq!(
        maps::get_header_map_value(&mut g, 0, 65530, 10, PTR, SIZE),
        Ok(BAD_MEMORY)
    );
    // Length that wraps around the address space.
    assert_eq!(control::log(&mut g, 2, 16, u32::MAX), Ok(BAD_MEMORY));
    assert!(g.host.vm.logs.is_empty());
    // Out-pointer outside memory: nothing is allocated in the guest.
    let (k, kn) = g.put(0, b"content-type");
    assert_eq!(
        maps::get_header_map_value(&mut g, 0, k, kn, 70000, SIZE),
        Ok(BAD_MEMORY)
    );
    assert_eq!(g.allocations, 0);
    // A value that does not fit in memory is refused, not truncated.
    let (sk, skn) = g.put(200, b"key");
    assert_eq!(
        shared::set_shared_data(&mut g, sk, skn, 65000, 1000, 0),
        Ok(BAD_MEMORY)
    );
    assert!(g.host.vm.shared_data.is_empty());
}

#[test]
fn out_of_range_enum_arguments_are_bad_arguments() {
    let mut g = FakeGuest::new().with_stream();
    let (k, kn) = g.put(0, b"x");
    assert_eq!(
        maps::get_header_map_value(&mut g, 9, k, kn, PTR, SIZE),
        Ok(BAD_ARGUMENT)
    );
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 42, 0, 10, PTR, SIZE),
        Ok(BAD_ARGUMENT)
    );
    assert_eq!(control::log(&mut g, 6, k, kn), Ok(BAD_ARGUMENT));
    assert_eq!(control::continue_stream(&mut g, 7), Ok(BAD_ARGUMENT));
    assert_eq!(
        metrics::define_metric(&mut g, 3, k, kn, PTR),
        Ok(BAD_ARGUMENT)
    );
}

#[test]
fn shared_data_cas_follows_envoy() {
    let mut g = FakeGuest::new();
    let (k, kn) = g.put(0, b"toolseal/server/a");
    let (v1, v1n) = g.put(64, b"one");
    let (v2, v2n) = g.put(80, b"two");
    // Missing key: reading is NotFound; the first write ignores the CAS it carries.
    assert_eq!(
        shared::get_shared_data(&mut g, k, kn, PTR, SIZE, CAS),
        Ok(NOT_FOUND)
    );
    assert_eq!(shared::set_shared_data(&mut g, k, kn, v1, v1n, 77), Ok(OK));
    assert_eq!(
        shared::get_shared_data(&mut g, k, kn, PTR, SIZE, CAS),
        Ok(OK)
    );
    assert_eq!(g.returned(PTR, SIZE), b"one");
    let first_cas = g.u32_at(CAS);
    assert_eq!(first_cas, 1, "CAS tokens start at 1");
    // A stale CAS is refused and changes nothing.
    assert_eq!(
        shared::set_shared_data(&mut g, k, kn, v2, v2n, first_cas + 5),
        Ok(CAS_MISMATCH)
    );
    assert_eq!(
        g.host.vm.shared_data.peek(b"toolseal/server/a"),
        Some((b"one".to_vec(), first_cas))
    );
    // The current CAS wins and moves the token.
    assert_eq!(
        shared::set_shared_data(&mut g, k, kn, v2, v2n, first_cas),
        Ok(OK)
    );
    assert_eq!(
        g.host.vm.shared_data.peek(b"toolseal/server/a"),
        Some((b"two".to_vec(), 2))
    );
    // The old token is now stale; CAS 0 means "no check".
    assert_eq!(
        shared::set_shared_data(&mut g, k, kn, v1, v1n, first_cas),
        Ok(CAS_MISMATCH)
    );
    assert_eq!(shared::set_shared_data(&mut g, k, kn, v1, v1n, 0), Ok(OK));
    assert_eq!(
        g.host.vm.shared_data.peek(b"toolseal/server/a"),
        Some((b"one".to_vec(), 3))
    );
    // The "only if absent" idiom (a CAS no entry carries) fails on an existing key.
    assert_eq!(
        shared::set_shared_data(&mut g, k, kn, v2, v2n, u32::MAX),
        Ok(CAS_MISMATCH)
    );
}

#[test]
fn header_map_wire_form_is_exact_and_round_trips() {
    let map = HeaderMap::from_pairs([(":status", "200"), ("X-A", "")]);
    let bytes = map.serialize();
    let mut expected = Vec::new();
    expected.extend(2u32.to_le_bytes());
    expected.extend(7u32.to_le_bytes());
    expected.extend(3u32.to_le_bytes());
    expected.extend(3u32.to_le_bytes());
    expected.extend(0u32.to_le_bytes());
    expected.extend(b":status\x00200\x00x-a\x00\x00");
    assert_eq!(bytes, expected);
    assert_eq!(HeaderMap::deserialize(&bytes), Ok(map));
    assert_eq!(deserialize_pairs(&[]), Ok(vec![]));
    let pairs = [(&b"k\x00ey"[..], &b"\xffv"[..])];
    assert_eq!(
        deserialize_pairs(&serialize_pairs(pairs.iter().copied())),
        Ok(vec![(b"k\x00ey".to_vec(), b"\xffv".to_vec())])
    );
}

#[test]
fn malformed_header_maps_are_refused() {
    let good = HeaderMap::from_pairs([("a", "b")]).serialize();
    assert_eq!(
        deserialize_pairs(&good[..good.len() - 1]),
        Err(PairsError::Truncated)
    );
    let mut no_nul = good.clone();
    let last = no_nul.len() - 1;
    no_nul[last] = b'!';
    assert_eq!(deserialize_pairs(&no_nul), Err(PairsError::MissingNul));
    let mut trailing = good.clone();
    trailing.push(0);
    assert_eq!(deserialize_pairs(&trailing), Err(PairsError::TrailingBytes));
    // A count whose size table cannot fit.
    assert_eq!(
        deserialize_pairs(&u32::MAX.to_le_bytes()),
        Err(PairsError::Truncated)
    );
    let mut g = FakeGuest::new().with_stream();
    let (p, n) = g.put(0, &trailing);
    assert_eq!(
        maps::set_header_map_pairs(&mut g, 0, p, n),
        Ok(Status::ParseFailure as u32)
    );
    assert_eq!(
        g.host
            .stream
            .as_ref()
            .unwrap()
            .request_headers
            .get(b":method"),
        Some(&b"POST"[..])
    );
}

#[test]
fn header_hostcalls_match_envoy() {
    let mut g = FakeGuest::new().with_stream();
    let (k, kn) = g.put(0, b"CONTENT-TYPE");
    assert_eq!(
        maps::get_header_map_value(&mut g, 0, k, kn, PTR, SIZE),
        Ok(OK)
    );
    assert_eq!(g.returned(PTR, SIZE), b"application/json");
    // Response headers do not exist before the response: BadArgument, as in Envoy.
    assert_eq!(
        maps::get_header_map_value(&mut g, 2, k, kn, PTR, SIZE),
        Ok(BAD_ARGUMENT)
    );
    assert_eq!(
        maps::get_header_map_pairs(&mut g, 3, PTR, SIZE),
        Ok(BAD_ARGUMENT)
    );
    let (x, xn) = g.put(40, b"x-tag");
    let (v1, v1n) = g.put(60, b"1");
    let (v2, v2n) = g.put(70, b"2");
    assert_eq!(
        maps::add_header_map_value(&mut g, 0, x, xn, v1, v1n),
        Ok(OK)
    );
    assert_eq!(
        maps::add_header_map_value(&mut g, 0, x, xn, v2, v2n),
        Ok(OK)
    );
    assert_eq!(
        maps::replace_header_map_value(&mut g, 0, x, xn, v2, v2n),
        Ok(OK)
    );
    let headers = &g.host.stream.as_ref().unwrap().request_headers;
    assert_eq!(
        headers
            .entries()
            .iter()
            .filter(|(k, _)| k == b"x-tag")
            .count(),
        1
    );
    assert_eq!(headers.get(b"x-tag"), Some(&b"2"[..]));
    assert_eq!(maps::remove_header_map_value(&mut g, 0, x, xn), Ok(OK));
    assert_eq!(
        maps::get_header_map_value(&mut g, 0, x, xn, PTR, SIZE),
        Ok(NOT_FOUND)
    );
    assert_eq!(maps::get_header_map_pairs(&mut g, 0, PTR, SIZE), Ok(OK));
    let pairs = deserialize_pairs(&g.returned(PTR, SIZE)).unwrap();
    assert_eq!(
        pairs,
        vec![
            (b":method".to_vec(), b"POST".to_vec()),
            (b"content-type".to_vec(), b"application/json".to_vec())
        ]
    );
    // Without a stream there is no map at all.
    g.host.stream = None;
    assert_eq!(
        maps::get_header_map_pairs(&mut g, 0, PTR, SIZE),
        Ok(BAD_ARGUMENT)
    );
}

#[test]
fn body_writes_follow_envoy_copy_from() {
    let mut body = b"hello world".to_vec();
    assert_eq!(buffers::copy_from(&mut body, 0, 11, b"bye"), Ok(()));
    assert_eq!(body, b"bye");
    assert_eq!(buffers::copy_from(&mut body, 0, 0, b">"), Ok(()));
    assert_eq!(body, b">bye");
    assert_eq!(buffers::copy_from(&mut body, 4, 0, b"!"), Ok(()));
    assert_eq!(body, b">bye!");
    assert_eq!(
        buffers::copy_from(&mut body, 2, 1, b"?"),
        Err(Status::BadArgument)
    );
    assert_eq!(buffers::copy_from(&mut body, 0, 999, b""), Ok(()));
    assert_eq!(body, b"");
}

#[test]
fn buffers_are_clamped_and_config_is_visible_only_while_configuring() {
    let mut g = FakeGuest::new().with_stream();
    g.host.vm.plugin_configuration = b"{\"posture\":\"strict\"}".to_vec();
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 7, 0, u32::MAX - 1, PTR, SIZE),
        Ok(NOT_FOUND)
    );
    g.host.vm.config_phase = ConfigPhase::Configure;
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 7, 0, u32::MAX - 1, PTR, SIZE),
        Ok(OK)
    );
    assert_eq!(g.returned(PTR, SIZE), b"{\"posture\":\"strict\"}");
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 7, 1, u32::MAX, PTR, SIZE),
        Ok(BAD_ARGUMENT)
    );
    let (d, dn) = g.put(0, b"x");
    assert_eq!(
        buffers::set_buffer_bytes(&mut g, 7, 0, 0, d, dn),
        Ok(BAD_ARGUMENT)
    );
    // No request body is buffered: NotFound; then a buffered one, read in part.
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 0, 0, 10, PTR, SIZE),
        Ok(NOT_FOUND)
    );
    g.host.stream.as_mut().unwrap().request_body = Some(b"0123456789".to_vec());
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 0, 3, 4, PTR, SIZE),
        Ok(OK)
    );
    assert_eq!(g.returned(PTR, SIZE), b"3456");
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 0, 8, 100, PTR, SIZE),
        Ok(OK)
    );
    assert_eq!(g.returned(PTR, SIZE), b"89");
    assert_eq!(buffers::set_buffer_bytes(&mut g, 0, 0, 10, d, dn), Ok(OK));
    assert_eq!(
        g.host.stream.as_ref().unwrap().request_body.as_deref(),
        Some(&b"x"[..])
    );
}

#[test]
fn properties_answer_route_request_and_metadata() {
    let mut g = FakeGuest::new().with_stream();
    g.host.vm.identity.route_name = "everything".into();
    let stream = g.host.stream.as_mut().unwrap();
    stream.request.path = "/mcp?x=1".into();
    let metadata = serde_json::json!({"payload": {"groups": ["ops", "dev"], "sub": "alice", "n": 2, "admin": true}});
    stream
        .dynamic_metadata
        .insert("envoy.filters.http.jwt_authn".into(), metadata);
    let state = &g.host;
    assert_eq!(
        properties::resolve(state, b"xds\x00route_name"),
        Ok(b"everything".to_vec())
    );
    assert_eq!(
        properties::resolve(state, b"route_name"),
        Ok(b"everything".to_vec())
    );
    assert_eq!(
        properties::resolve(state, b"request\x00url_path"),
        Ok(b"/mcp".to_vec())
    );
    assert_eq!(
        properties::resolve(state, b"request\x00headers\x00Content-Type"),
        Ok(b"application/json".to_vec())
    );
    let ns = b"metadata\x00filter_metadata\x00envoy.filters.http.jwt_authn\x00payload\x00";
    let at = |key: &str| [&ns[..], key.as_bytes()].concat();
    assert_eq!(
        properties::resolve(state, &at("sub")),
        Ok(b"alice".to_vec())
    );
    assert_eq!(
        properties::resolve(state, &at("n")),
        Ok(2f64.to_le_bytes().to_vec())
    );
    assert_eq!(properties::resolve(state, &at("admin")), Ok(vec![1]));
    let list = [(&b"ops"[..], &b""[..]), (&b"dev"[..], &b""[..])];
    assert_eq!(
        properties::resolve(state, &at("groups")),
        Ok(serialize_pairs(list.iter().copied()))
    );
    assert_eq!(
        properties::resolve(state, &at("missing")),
        Err(Fail::Status(Status::NotFound))
    );
    assert_eq!(
        properties::resolve(state, b"metadata"),
        Err(Fail::Status(Status::SerializationFailure))
    );
    assert_eq!(
        properties::resolve(state, b"response\x00code"),
        Err(Fail::Status(Status::NotFound))
    );
    assert_eq!(
        properties::resolve(state, b"node\x00id"),
        Err(Fail::Status(Status::NotFound))
    );
    // set_property values read back by the same path.
    let (p, pn) = g.put(0, b"wasm.toolseal");
    let (v, vn) = g.put(32, b"seen");
    assert_eq!(properties::set_property(&mut g, p, pn, v, vn), Ok(OK));
    assert_eq!(properties::get_property(&mut g, p, pn, PTR, SIZE), Ok(OK));
    assert_eq!(g.returned(PTR, SIZE), b"seen");
}

#[test]
fn logs_below_the_host_level_are_dropped_and_levels_reported() {
    let mut g = FakeGuest::new();
    g.host.vm.log_level = LogLevel::Debug;
    let (m, mn) = g.put(0, b"toolseal.decision {}");
    assert_eq!(control::log(&mut g, 0, m, mn), Ok(OK));
    assert_eq!(control::log(&mut g, 1, m, mn), Ok(OK));
    assert_eq!(g.host.vm.logs.len(), 1);
    assert_eq!(g.host.vm.logs[0].level, LogLevel::Debug);
    assert_eq!(g.host.vm.logs[0].message, "toolseal.decision {}");
    assert_eq!(control::get_log_level(&mut g, PTR), Ok(OK));
    assert_eq!(g.u32_at(PTR), 1);
    g.host.vm.now_ns = 0x0102_0304_0506_0708;
    assert_eq!(control::get_current_time_nanoseconds(&mut g, PTR), Ok(OK));
    assert_eq!(
        &g.memory[PTR as usize..PTR as usize + 8],
        &0x0102_0304_0506_0708u64.to_le_bytes()
    );
}

#[test]
fn metrics_follow_envoy_rules() {
    let mut g = FakeGuest::new();
    let (n, nn) = g.put(0, b"toolseal_calls_denied");
    assert_eq!(metrics::define_metric(&mut g, 0, n, nn, PTR), Ok(OK));
    let id = g.u32_at(PTR);
    assert_eq!(metrics::define_metric(&mut g, 0, n, nn, PTR), Ok(OK));
    assert_eq!(g.u32_at(PTR), id, "same name, same id");
    assert_eq!(
        metrics::define_metric(&mut g, 1, n, nn, PTR),
        Ok(BAD_ARGUMENT)
    );
    assert_eq!(metrics::increment_metric(&mut g, id, 2), Ok(OK));
    assert_eq!(metrics::increment_metric(&mut g, id, -1), Ok(BAD_ARGUMENT));
    assert_eq!(metrics::record_metric(&mut g, id, 3), Ok(OK));
    assert_eq!(metrics::get_metric(&mut g, id, PTR), Ok(OK));
    assert_eq!(g.u32_at(PTR), 5);
    assert_eq!(metrics::get_metric(&mut g, id + 1, PTR), Ok(NOT_FOUND));
    assert_eq!(metrics::increment_metric(&mut g, 0, 1), Ok(NOT_FOUND));
}

#[test]
fn local_response_is_recorded_only_inside_a_stream() {
    let mut g = FakeGuest::new();
    let headers = HeaderMap::from_pairs([("content-type", "application/json")]).serialize();
    let (h, hn) = g.put(0, &headers);
    let (b, bn) = g.put(200, b"{\"denied\":true}");
    assert_eq!(
        control::send_local_response(&mut g, 403, (0, 0), (b, bn), (h, hn), -1),
        Ok(BAD_ARGUMENT)
    );
    let mut g = FakeGuest {
        memory: g.memory,
        ..FakeGuest::new()
    }
    .with_stream();
    assert_eq!(
        control::send_local_response(&mut g, 403, (0, 0), (b, bn), (h, hn), -1),
        Ok(OK)
    );
    let reply = &g.host.stream.as_ref().unwrap().local_responses[0];
    assert_eq!(
        (reply.status, reply.body.as_slice()),
        (403, &b"{\"denied\":true}"[..])
    );
    assert_eq!(
        reply.headers.get(b"content-type"),
        Some(&b"application/json"[..])
    );
}

#[test]
fn outgoing_calls_are_refused_and_named() {
    let mut g = FakeGuest::new();
    assert_eq!(
        control::unsupported(&mut g, "proxy_http_call"),
        Ok(Status::Unimplemented as u32)
    );
    assert_eq!(g.host.vm.unsupported_calls, vec!["proxy_http_call"]);
}

#[test]
fn wasi_stubs_capture_output_and_stay_deterministic() {
    let mut g = FakeGuest::new();
    let (a, an) = g.put(300, b"panicked at ");
    let (b, bn) = g.put(400, b"src/filter.rs");
    let iovs: Vec<u8> = [a, an, b, bn]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let (iov, _) = g.put(500, &iovs);
    assert_eq!(
        wasi::fd_write(&mut g, 2, iov, 2, PTR),
        Ok(wasi::ERRNO_SUCCESS)
    );
    assert_eq!(g.u32_at(PTR), an + bn);
    assert_eq!(g.host.vm.stderr, b"panicked at src/filter.rs");
    assert_eq!(wasi::fd_write(&mut g, 5, iov, 2, PTR), Ok(wasi::ERRNO_BADF));
    assert_eq!(
        wasi::fd_write(&mut g, 1, 65000, 100, PTR),
        Ok(wasi::ERRNO_FAULT)
    );
    assert_eq!(
        wasi::proc_exit(&mut g, 3),
        Err(Trap("the plugin called WASI proc_exit(3)".into()))
    );
    assert_eq!(wasi::random_get(&mut g, 600, 16), Ok(wasi::ERRNO_SUCCESS));
    let first = g.memory[600..616].to_vec();
    let mut again = FakeGuest::new();
    assert_eq!(
        wasi::random_get(&mut again, 600, 16),
        Ok(wasi::ERRNO_SUCCESS)
    );
    assert_eq!(again.memory[600..616], first[..], "same seed, same bytes");
    assert_ne!(first, vec![0; 16]);
    assert_eq!(wasi::random_get(&mut g, 65530, 100), Ok(wasi::ERRNO_FAULT));
    g.put(PTR, &[9; 8]);
    assert_eq!(
        wasi::sizes_get_empty(&mut g, PTR, SIZE),
        Ok(wasi::ERRNO_SUCCESS)
    );
    assert_eq!((g.u32_at(PTR), g.u32_at(SIZE)), (0, 0));
}

/// Deterministic argument soup: edge values and random words for every hostcall. No call
/// may panic, and each answers a status the ABI defines (or a WASI errno).
#[test]
fn arbitrary_arguments_never_panic() {
    const EDGES: [u32; 9] = [0, 1, 2, 7, 100, 65535, 65536, u32::MAX - 3, u32::MAX];
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = (seed ^ (seed >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let z = z ^ (z >> 29);
        if z.is_multiple_of(3) {
            EDGES[(z >> 8) as usize % EDGES.len()]
        } else {
            (z >> 16) as u32 % 70000
        }
    };
    let known = [0, 1, 2, 3, 4, 6, 7, 8, 10, 12];
    for round in 0..2000 {
        let mut g = if round % 2 == 0 {
            FakeGuest::new().with_stream()
        } else {
            FakeGuest::new()
        };
        g.host.vm.config_phase = if round % 3 == 0 {
            ConfigPhase::Configure
        } else {
            ConfigPhase::None
        };
        if let Some(stream) = g.host.stream.as_mut() {
            stream.request_body = Some(vec![b'x'; 10]);
        }
        let a: Vec<u32> = (0..8).map(|_| next()).collect();
        let results = [
            maps::get_header_map_pairs(&mut g, a[0] % 5, a[1], a[2]),
            maps::set_header_map_pairs(&mut g, a[0] % 5, a[1], a[2] % 200),
            maps::get_header_map_value(&mut g, a[0] % 5, a[1], a[2], a[3], a[4]),
            maps::replace_header_map_value(&mut g, a[0], a[1], a[2], a[3], a[4]),
            maps::add_header_map_value(&mut g, a[0] % 5, a[1], a[2], a[3], a[4]),
            maps::remove_header_map_value(&mut g, a[0] % 5, a[1], a[2]),
            buffers::get_buffer_bytes(&mut g, a[0] % 8, a[1], a[2], a[3], a[4]),
            buffers::set_buffer_bytes(&mut g, a[0] % 8, a[1], a[2], a[3], a[4]),
            properties::get_property(&mut g, a[0], a[1] % 64, a[2], a[3]),
            properties::set_property(&mut g, a[0], a[1], a[2], a[3]),
            shared::get_shared_data(&mut g, a[0], a[1] % 64, a[2], a[3], a[4]),
            shared::set_shared_data(&mut g, a[0], a[1] % 64, a[2], a[3], a[4]),
            shared::register_shared_queue(&mut g, a[0], a[1], a[2]),
            shared::resolve_shared_queue(&mut g, a[0], a[1], a[2], a[3], a[4]),
            shared::enqueue_shared_queue(&mut g, a[0] % 3, a[1], a[2]),
            shared::dequeue_shared_queue(&mut g, a[0] % 3, a[1], a[2]),
            metrics::define_metric(&mut g, a[0] % 4, a[1], a[2], a[3]),
            metrics::increment_metric(&mut g, a[0] % 3, i64::from(a[1] as i32)),
            metrics::record_metric(&mut g, a[0] % 3, u64::from(a[1])),
            metrics::get_metric(&mut g, a[0] % 3, a[1]),
            control::log(&mut g, a[0] % 8, a[1], a[2]),
            control::get_log_level(&mut g, a[0]),
            control::get_current_time_nanoseconds(&mut g, a[0]),
            control::continue_stream(&mut g, a[0] % 4),
            control::close_stream(&mut g, a[0] % 4),
            control::send_local_response(
                &mut g,
                a[0],
                (a[1], a[2]),
                (a[3], a[4]),
                (a[5], a[6]),
                a[7] as i32,
            ),
            control::set_effective_context(&mut g, a[0] % 4),
        ];
        for (i, result) in results.iter().enumerate() {
            let code = result
                .as_ref()
                .unwrap_or_else(|trap| panic!("round {round} call {i} trapped: {trap}"));
            assert!(
                known.contains(code),
                "round {round} call {i}: unknown status {code}"
            );
        }
        let wasi_results = [
            wasi::fd_write(&mut g, a[0] % 4, a[1], a[2] % 2000, a[3]),
            wasi::random_get(&mut g, a[0], a[1] % 10_000),
            wasi::clock_time_get(&mut g, a[0] % 5, 0, a[1]),
            wasi::sizes_get_empty(&mut g, a[0], a[1]),
        ];
        for result in wasi_results {
            assert!(
                matches!(result, Ok(0 | 8 | 21 | 28)),
                "round {round}: {result:?}"
            );
        }
    }
}

/// Places a `proxy_http_call` for `cluster` with `headers` and `body` in guest memory and
/// makes it; returns the status.
fn http_call_with(
    g: &mut FakeGuest,
    cluster: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    token_ptr: u32,
) -> u32 {
    let up = g.put(1000, cluster.as_bytes());
    let hs = g.put(
        2000,
        &HeaderMap::from_pairs(headers.iter().copied()).serialize(),
    );
    let b = g.put(4000, body);
    let tr = g.put(6000, &HeaderMap::default().serialize());
    http_call::http_call(g, up, hs, b, tr, 1000, token_ptr).unwrap()
}

const STORE_HEADERS: [(&str, &str); 4] = [
    (":method", "POST"),
    (":path", "/v3/kv/range"),
    (":authority", "toolseal_store"),
    ("content-type", "application/json"),
];

#[test]
fn http_calls_are_recorded_for_the_served_cluster_only() {
    let mut g = FakeGuest::new();
    g.host.vm.effective_context = 7;
    // No cluster served: refused as Envoy refuses an unknown cluster, and named.
    assert_eq!(
        http_call_with(&mut g, "toolseal_store", &STORE_HEADERS, b"{}", PTR),
        BAD_ARGUMENT
    );
    assert_eq!(g.host.vm.unsupported_calls, vec!["proxy_http_call"]);
    g.host.vm.callouts.cluster = Some("toolseal_store".into());
    assert_eq!(
        http_call_with(&mut g, "elsewhere", &STORE_HEADERS, b"{}", PTR),
        BAD_ARGUMENT
    );
    // Without :path (or :method, :authority) Envoy refuses the call.
    assert_eq!(
        http_call_with(&mut g, "toolseal_store", &STORE_HEADERS[..1], b"{}", PTR),
        BAD_ARGUMENT
    );
    assert!(g.host.vm.callouts.pending.is_empty());
    // A token pointer outside memory starts no call.
    assert_eq!(
        http_call_with(&mut g, "toolseal_store", &STORE_HEADERS, b"{}", 70_000),
        BAD_MEMORY
    );
    assert!(g.host.vm.callouts.pending.is_empty());
    assert_eq!(
        http_call_with(&mut g, "toolseal_store", &STORE_HEADERS, b"{\"k\":1}", PTR),
        OK
    );
    assert_eq!(
        http_call_with(&mut g, "toolseal_store", &STORE_HEADERS, b"{}", PTR + 4),
        OK
    );
    let pending = &g.host.vm.callouts.pending;
    assert_eq!(
        (g.u32_at(PTR), g.u32_at(PTR + 4)),
        (1, 2),
        "tokens 1, 2, ..."
    );
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0].context_id, 7);
    assert_eq!(pending[0].body, b"{\"k\":1}");
    assert_eq!(pending[0].path(), "/v3/kv/range");
    // A body pointer past the end of memory.
    let up = g.put(1000, b"toolseal_store");
    let hs = g.put(2000, &HeaderMap::from_pairs(STORE_HEADERS).serialize());
    let tr = g.put(6000, &HeaderMap::default().serialize());
    assert_eq!(
        http_call::http_call(&mut g, up, hs, (65_530, 100), tr, 1000, PTR).unwrap(),
        BAD_MEMORY
    );
    // Headers that are not a serialized map.
    assert_eq!(
        http_call::http_call(&mut g, up, (2000, 3), (4000, 0), tr, 1000, PTR).unwrap(),
        Status::ParseFailure as u32
    );
    assert_eq!(g.host.vm.callouts.pending.len(), 2);
    // A runner can drop the calls made from a context.
    assert_eq!(g.host.vm.callouts.cancel_context(7).len(), 2);
    assert!(g.host.vm.callouts.pending.is_empty());
}

#[test]
fn a_call_answer_is_readable_only_while_delivered_and_a_failed_one_has_no_headers_or_body() {
    let mut g = FakeGuest::new();
    let key = g.put(200, b":status");
    // Outside a delivery the answer's map and buffer do not exist.
    assert_eq!(
        maps::get_header_map_value(&mut g, 6, key.0, key.1, PTR, SIZE).unwrap(),
        BAD_ARGUMENT
    );
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 4, 0, 100, PTR, SIZE).unwrap(),
        NOT_FOUND
    );
    g.host.vm.callouts.delivering = Some(Some(CallAnswer {
        headers: HeaderMap::from_pairs([(":status", "200")]),
        body: b"{\"header\":{}}".to_vec(),
    }));
    assert_eq!(
        maps::get_header_map_value(&mut g, 6, key.0, key.1, PTR, SIZE).unwrap(),
        OK
    );
    assert_eq!(g.returned(PTR, SIZE), b"200");
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 4, 0, 100, PTR, SIZE).unwrap(),
        OK
    );
    assert_eq!(g.returned(PTR, SIZE), b"{\"header\":{}}");
    // Read-only: neither the map nor the body can be changed.
    let v = g.put(300, b"500");
    assert_eq!(
        maps::replace_header_map_value(&mut g, 6, key.0, key.1, v.0, v.1).unwrap(),
        BAD_ARGUMENT
    );
    assert_eq!(
        buffers::set_buffer_bytes(&mut g, 4, 0, 0, v.0, v.1).unwrap(),
        BAD_ARGUMENT
    );
    // A stream's held body is not handed over while an answer is delivered (Envoy hands a
    // body only during a body callback).
    g.host.stream = Some(StreamState {
        response_body: Some(b"held".to_vec()),
        ..StreamState::default()
    });
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 1, 0, 100, PTR, SIZE).unwrap(),
        NOT_FOUND
    );
    // A failed call (reset, timeout): delivered with no headers and no body.
    g.host.vm.callouts.delivering = Some(None);
    assert_eq!(
        maps::get_header_map_value(&mut g, 6, key.0, key.1, PTR, SIZE).unwrap(),
        BAD_ARGUMENT
    );
    assert_eq!(
        buffers::get_buffer_bytes(&mut g, 4, 0, 100, PTR, SIZE).unwrap(),
        NOT_FOUND
    );
}

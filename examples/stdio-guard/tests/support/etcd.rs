//! A real etcd for tests: Debian's `etcd-server` on free loopback ports with its own data
//! directory, waited for on `GET /health`, stopped by its PID and removed when dropped.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolseal_core::wire::etcd;
use toolseal_stdio::store_client::StoreClient;

/// The key prefix the tests' guards share.
pub const PREFIX: &str = "/toolseal/team/";

/// A real etcd on loopback, stopped (by its PID) and its data removed when dropped.
pub struct Etcd {
    child: Child,
    /// Its temporary directory (data, log; tests may put files here).
    pub dir: PathBuf,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

/// A loopback port nothing listens on (at the time of asking).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn find_etcd() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
}

impl Etcd {
    /// Starts one, or `None` (with the reason on stderr) when `etcd` is not installed and
    /// `TOOLSEAL_REQUIRE_ETCD` is unset.
    pub fn start(name: &str) -> Option<Etcd> {
        let Some(binary) = find_etcd() else {
            assert!(
                std::env::var_os("TOOLSEAL_REQUIRE_ETCD").is_none(),
                "TOOLSEAL_REQUIRE_ETCD is set but etcd is not installed (apt-get install -y etcd-server)"
            );
            eprintln!(
                "SKIPPED {name}: etcd is not installed (apt-get install -y etcd-server; set TOOLSEAL_REQUIRE_ETCD=1 to fail instead)"
            );
            return None;
        };
        let dir =
            std::env::temp_dir().join(format!("toolseal-stdio-etcd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (client, peer) = (free_port(), free_port());
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.join("etcd.log")).unwrap();
        let child = Command::new(binary)
            .args(["--name", "toolseal-test", "--data-dir"])
            .arg(dir.join("data"))
            .args([
                "--listen-client-urls",
                &url,
                "--advertise-client-urls",
                &url,
            ])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .arg("--initial-cluster")
            .arg(format!("toolseal-test={peer_url}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let etcd = Etcd { child, dir, url };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !etcd.healthy() {
            assert!(
                Instant::now() < deadline,
                "etcd did not answer GET /health within 30 s: {}",
                std::fs::read_to_string(etcd.dir.join("etcd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(etcd)
    }

    fn healthy(&self) -> bool {
        let address = self.url.trim_start_matches("http://");
        let Ok(mut stream) = TcpStream::connect(address) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request =
            format!("GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
            && answer.contains("\"health\":\"true\"")
    }

    /// The guard's `--store` value for it.
    pub fn store_option(&self) -> String {
        format!("etcd={},prefix={PREFIX}", self.url)
    }

    /// The server record etcd holds for `server`.
    pub fn record(&self, server: &str) -> Option<Value> {
        let client = StoreClient::parse(&self.url).unwrap();
        let key = format!("{PREFIX}servers/{server}");
        let body = etcd::range_request(key.as_bytes(), None, false, 0);
        let (status, answer) = client
            .post(etcd::RANGE_PATH, &body, Duration::from_secs(5))
            .unwrap();
        assert_eq!(status, 200);
        let kv = etcd::parse_range(&answer).unwrap().kvs.into_iter().next()?;
        Some(serde_json::from_slice(&kv.value).unwrap())
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        // Its own child, by PID.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

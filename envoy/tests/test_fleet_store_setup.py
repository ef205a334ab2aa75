"""The fleet store's moving parts without the fleet: etcd from Debian started and stopped by PID
(plain and with mTLS), and the Envoy config with the store cluster, validated by Envoy itself
(``envoy --mode validate``, with and without the plugin loading a ``store`` block)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

import envoyctl
import etcdctl

SYNC_MS = 200


def test_etcd_starts_on_loopback_keeps_its_data_and_stops_by_pid(tmp_path: Path) -> None:
    etcd = etcdctl.start(tmp_path / "etcd")
    try:
        assert etcd.healthy()
        store = etcd.client()
        revision = store.put("/toolseal/t/servers/demo", b'{"format":1}')
        (kv,) = store.range_prefix("/toolseal/t/")
        assert (kv.key, kv.value, kv.mod_revision) == ("/toolseal/t/servers/demo", b'{"format":1}', revision)
        assert store.requests_served()["Put"] == 1
        pid = etcd.pid
        etcd.stop()
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
        assert not etcd.healthy()
        with pytest.raises(etcdctl.EtcdError, match="did not answer"):
            store.get("/toolseal/t/servers/demo")
        etcd.start()  # same ports, same data directory: what an outage's end looks like
        assert store.get("/toolseal/t/servers/demo") == kv
        assert store.delete("/toolseal/t/servers/demo") == 1
        assert store.range_prefix("/toolseal/t/") == []
    finally:
        etcd.stop()


def test_etcd_with_mtls_refuses_a_client_without_a_certificate(tmp_path: Path) -> None:
    pki = etcdctl.make_pki(tmp_path / "pki")
    etcd = etcdctl.start(tmp_path / "etcd", pki=pki)
    try:
        assert etcd.url.startswith("https://") and etcd.healthy()
        etcd.client().put("/toolseal/t/servers/demo", b"{}")
        no_certificate = ssl.create_default_context(cafile=str(pki.ca))
        with pytest.raises(etcdctl.EtcdError, match="did not answer"):
            etcdctl.EtcdClient(etcd.url, tls=no_certificate).get("/toolseal/t/servers/demo")
        assert etcd.client().get("/toolseal/t/servers/demo") is not None
    finally:
        etcd.stop()


@pytest.mark.parametrize("tls", [False, True])
def test_the_store_cluster_renders_and_envoy_validates_it(tmp_path: Path, tls: bool) -> None:
    config = envoyctl.default_plugin_config()
    config["store"] = envoyctl.store_config("/toolseal/prod/", sync_ms=SYNC_MS)
    pki = etcdctl.make_pki(tmp_path / "pki") if tls else None
    files = (str(pki.ca), str(pki.cert("client")), str(pki.key("client"))) if pki else None
    text = envoyctl.render(plugin_config=config, store=envoyctl.StoreCluster(2379, tls=files),
                           with_plugin=False)
    assert "name: toolseal_store" in text and "port_value: 2379" in text
    assert ("UpstreamTlsContext" in text) is tls
    path = tmp_path / "envoy.yaml"
    path.write_text(text)
    result = envoyctl.validate(path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # Without a store nothing of it is rendered: the shipped config stays as it was.
    assert "toolseal_store" not in envoyctl.render()


def test_envoy_validates_the_plugin_with_a_store(wasm: Path, tmp_path: Path) -> None:
    config = envoyctl.default_plugin_config()
    config["store"] = envoyctl.store_config("/toolseal/prod/", sync_ms=SYNC_MS)
    path = tmp_path / "envoy.yaml"
    path.write_text(envoyctl.render(plugin_config=config, store=envoyctl.StoreCluster(2379),
                                    wasm_path=wasm))
    result = envoyctl.validate(path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]

"""The plugin as an OCI image (scripts/oci-image.sh), checked with real tools: skopeo reads the
layout and the oci-archive, a real registry (Debian's docker-registry, the CNCF distribution
registry, on 127.0.0.1, started and stopped by PID) takes the push, and the image pulled back
by digest holds the very bytes of the .wasm. The same module always gives the same digests.

Istio's and Envoy Gateway's image fetchers are the same code (Envoy Gateway's is Istio's,
copied); ``wasm_as_istio_reads_it`` restates its rules (a docker image or an OCI image with
exactly one tar+gzip layer holding ``plugin.wasm`` — "compat"; or exactly two layers, one of
them ``application/vnd.module.wasm.content.layer.v1+wasm`` — the Wasm artifact) and is run on
what the registry serves over its HTTP API. It is a restatement, not their code: no Istio or
Envoy Gateway runs here.

The tools come from scripts/setup-oci.sh. Without them the tests skip, except under CI
(``CI=true``) or ``TOOLSEAL_REQUIRE_OCI=1`` (scripts/test.sh), where a missing tool fails.
The module is ``TOOLSEAL_WASM`` (default the repo's build output) and, when set,
``TOOLSEAL_ADMIN_WASM`` (a second module: one more image).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest
import yaml

import envoyctl
from envoyctl import EnvoyError, free_port, stop_pid, wait_until

REPO = envoyctl.REPO
SCRIPT = REPO / "scripts" / "oci-image.sh"
REGISTRY_BIN = Path("/usr/bin/docker-registry")
WASM_CONFIG = "application/vnd.module.wasm.config.v1+json"
WASM_LAYER = "application/vnd.module.wasm.content.layer.v1+wasm"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
ISTIO = REPO / "examples" / "istio" / "wasmplugin.yaml"
ISTIO_ADMIN = REPO / "examples" / "istio" / "admin.yaml"
GATEWAY = REPO / "examples" / "envoy-gateway" / "extension-policy.yaml"
DIGEST_REF = re.compile(r"^(?P<repo>[^@]+)@sha256:(?P<hex>[0-9a-f]{64})$")


def _required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("TOOLSEAL_REQUIRE_OCI") == "1"


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    """skopeo and docker-registry, or skip (fail under CI / TOOLSEAL_REQUIRE_OCI=1)."""
    skopeo = shutil.which("skopeo")
    missing = [name for name, path in (("skopeo", skopeo), ("docker-registry", REGISTRY_BIN))
               if not path or not Path(path).is_file()]
    if missing:
        message = f"{', '.join(missing)} not installed: run scripts/setup-oci.sh"
        if _required():
            pytest.fail(message)
        pytest.skip(message)
    return {"skopeo": str(skopeo), "registry": str(REGISTRY_BIN)}


@pytest.fixture(scope="module")
def modules(wasm_snapshot: Path | None) -> list[Path]:
    """The data module (snapshot of TOOLSEAL_WASM) and TOOLSEAL_ADMIN_WASM if set."""
    if wasm_snapshot is None:
        message = f"{REPO / envoyctl.DEFAULT_WASM} is not built"
        if os.environ.get("TOOLSEAL_REQUIRE_PLUGIN") == "1":
            pytest.fail(message)
        pytest.skip(message)
    admin = os.environ.get("TOOLSEAL_ADMIN_WASM")
    return [wasm_snapshot, *([Path(admin)] if admin else [])]


def build(out: Path, wasm_paths: list[Path], *extra: str) -> tuple[dict[str, Any], str]:
    """Run scripts/oci-image.sh; returns (images.json by image name, what it printed)."""
    result = subprocess.run([str(SCRIPT), *map(str, wasm_paths), "--out", str(out), *extra],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    images = json.loads((out / "images.json").read_text())["images"]
    return {image["name"]: image for image in images}, result.stdout


@pytest.fixture(scope="module")
def built(modules: list[Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every module built once."""
    out = tmp_path_factory.mktemp("oci")
    images, printed = build(out, modules)
    return {"out": out, "images": images, "printed": printed}


def _data_image(built: dict[str, Any]) -> dict[str, Any]:
    return built["images"]["toolseal"]


def skopeo(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(["skopeo", *args], capture_output=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _blob(layout: Path, digest: str) -> bytes:
    return (layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_bytes()


def wasm_as_istio_reads_it(manifest_bytes: bytes, blob: Callable[[str], bytes]) -> bytes:
    """The module Istio / Envoy Gateway would extract from this image, or AssertionError.

    Their order: a docker manifest must be compat (last layer docker tar+gzip with
    plugin.wasm); an OCI one is tried as compat (exactly one OCI tar+gzip layer holding
    plugin.wasm), then as the Wasm artifact (exactly two layers, the wasm one taken raw)."""
    manifest = json.loads(manifest_bytes)
    layers = manifest["layers"]

    def plugin_wasm(layer: dict[str, Any]) -> bytes:
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob(layer["digest"])))) as tar:
            for member in tar:
                if os.path.basename(member.name) == "plugin.wasm":
                    return tar.extractfile(member).read()
        raise AssertionError("plugin.wasm not found in the layer")

    if manifest.get("mediaType") == DOCKER_MANIFEST:
        assert layers and layers[-1]["mediaType"] == DOCKER_LAYER
        return plugin_wasm(layers[-1])
    if len(layers) == 1 and layers[0]["mediaType"] == OCI_LAYER_GZIP:
        return plugin_wasm(layers[0])
    assert len(layers) == 2, f"number of layers must be 2 but got {len(layers)}"
    wasm_layers = [layer for layer in layers if layer["mediaType"] == WASM_LAYER]
    assert wasm_layers, f"could not find the layer of type {WASM_LAYER}"
    module = blob(wasm_layers[0]["digest"])
    assert module[:4] == b"\0asm", "not a Wasm binary"
    return module


def test_the_layout_is_the_wasm_artifact_and_its_layer_is_the_module(
        tools: dict[str, str], built: dict[str, Any], modules: list[Path]) -> None:
    for wasm in modules:
        image = built["images"][wasm.name.removesuffix(".wasm").removesuffix("_plugin").replace("_", "-")]
        module = wasm.read_bytes()
        layout = Path(image["layout"])
        # What the script printed is what it wrote.
        assert f"  manifest {image['manifest']}\n" in built["printed"]
        assert f"  layer    {image['layer']}  " in built["printed"]
        assert image["layer"] == _sha256(module)

        raw = skopeo("inspect", "--raw", f"oci:{layout}").stdout
        assert _sha256(raw) == image["manifest"]
        assert skopeo("inspect", "--raw", f"oci-archive:{image['archive']}").stdout == raw
        manifest = json.loads(raw)
        assert (manifest["schemaVersion"], manifest["mediaType"]) == (2, OCI_MANIFEST)
        assert manifest["config"]["mediaType"] == WASM_CONFIG
        config = json.loads(_blob(layout, manifest["config"]["digest"]))
        assert config == {"type": "envoy_proxy", "abiVersions": ["proxy_abi_version_0_2_1"],
                          "config": {"root_ids": ["toolseal"]}}
        assert [layer["mediaType"] for layer in manifest["layers"]] == [WASM_CONFIG, WASM_LAYER]
        wasm_layer = manifest["layers"][1]
        assert (wasm_layer["digest"], wasm_layer["size"]) == (image["layer"], len(module))
        assert wasm_layer["annotations"] == {"org.opencontainers.image.title": "plugin.wasm"}
        # Canonical JSON: what a re-serialization with sorted keys and no spaces gives.
        assert raw == json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        assert wasm_as_istio_reads_it(raw, lambda d: _blob(layout, d)) == module

        compat = Path(image["compat"]["layout"])
        raw = skopeo("inspect", "--raw", f"oci:{compat}").stdout
        assert _sha256(raw) == image["compat"]["manifest"]
        manifest = json.loads(raw)
        assert [layer["mediaType"] for layer in manifest["layers"]] == [OCI_LAYER_GZIP]
        assert manifest["annotations"] == {"module.wasm.image/variant": "compat"}
        assert wasm_as_istio_reads_it(raw, lambda d: _blob(compat, d)) == module


def test_skopeo_copies_the_layout_byte_for_byte(tools: dict[str, str], built: dict[str, Any],
                                               modules: list[Path], tmp_path: Path) -> None:
    image = _data_image(built)
    copied = tmp_path / "copied"
    skopeo("copy", "--quiet", f"oci:{image['layout']}", f"dir:{copied}")
    manifest = (copied / "manifest.json").read_bytes()
    assert _sha256(manifest) == image["manifest"]
    assert (copied / image["layer"].split(":", 1)[1]).read_bytes() == modules[0].read_bytes()


@pytest.fixture(scope="module")
def registry(tools: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real registry on 127.0.0.1 (storage in a tmp dir); yields host:port."""
    work = tmp_path_factory.mktemp("registry")
    port = free_port()
    config = work / "config.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1,
        "log": {"level": "info"},
        "storage": {"filesystem": {"rootdirectory": str(work / "data")}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }))
    log = (work / "registry.log").open("wb")
    popen = subprocess.Popen([tools["registry"], "serve", str(config)], stdin=subprocess.DEVNULL,
                             stdout=log, stderr=log, start_new_session=True)
    (work / "registry.pid").write_text(f"{popen.pid}\n")

    def up() -> bool:
        if popen.poll() is not None:
            raise EnvoyError(f"docker-registry exited with {popen.returncode}; see {work / 'registry.log'}")
        return envoyctl.http_get(f"http://127.0.0.1:{port}/v2/", timeout=0.5)[0] == 200

    try:
        wait_until(up, 30, f"docker-registry on 127.0.0.1:{port}")
        yield f"127.0.0.1:{port}"
    finally:
        stop_pid(popen.pid, 10, popen)


def _registry_get(registry: str, repo: str) -> Callable[..., httpx.Response]:
    def get(kind: str, reference: str) -> httpx.Response:
        response = httpx.get(f"http://{registry}/v2/{repo}/{kind}/{reference}", timeout=30,
                             headers={"accept": f"{OCI_MANIFEST}, {DOCKER_MANIFEST}"})
        assert response.status_code == 200, (kind, reference, response.text)
        return response
    return get


@pytest.mark.parametrize("variant", ["artifact", "compat"])
def test_pushed_to_a_registry_and_pulled_back_by_digest_it_is_the_same_module(
        registry: str, built: dict[str, Any], modules: list[Path], tmp_path: Path,
        variant: str) -> None:
    image = _data_image(built)
    source = image if variant == "artifact" else image["compat"]
    repo = "toolseal" if variant == "artifact" else "toolseal-compat"
    module = modules[0].read_bytes()
    skopeo("copy", "--quiet", "--dest-tls-verify=false", f"oci-archive:{source['archive']}",
           f"docker://{registry}/{repo}:latest")

    # The registry serves the manifest under the digest the script printed.
    get = _registry_get(registry, repo)
    by_tag = get("manifests", "latest")
    assert by_tag.headers["docker-content-digest"] == source["manifest"]
    by_digest = get("manifests", source["manifest"])
    assert _sha256(by_digest.content) == source["manifest"]
    # What Istio's and Envoy Gateway's fetchers would extract over this same API.
    assert wasm_as_istio_reads_it(by_digest.content, lambda d: get("blobs", d).content) == module

    ref = f"docker://{registry}/{repo}@{source['manifest']}"
    raw = skopeo("inspect", "--raw", "--tls-verify=false", ref).stdout
    assert _sha256(raw) == source["manifest"]
    pulled = tmp_path / "pulled"
    skopeo("copy", "--quiet", "--src-tls-verify=false", ref, f"dir:{pulled}")
    assert _sha256((pulled / "manifest.json").read_bytes()) == source["manifest"]
    if variant == "artifact":
        # The layer is the .wasm itself, byte for byte.
        assert (pulled / image["layer"].split(":", 1)[1]).read_bytes() == module
    else:
        [layer] = json.loads(raw)["layers"]
        packed = (pulled / layer["digest"].split(":", 1)[1]).read_bytes()
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(packed))) as tar:
            assert tar.getnames() == ["plugin.wasm"]
            assert tar.extractfile("plugin.wasm").read() == module


def _with_custom_section(source: Path, target: Path, payload: bytes) -> Path:
    name = b"toolseal-test"
    section = bytes([len(name)]) + name + payload
    target.write_bytes(source.read_bytes() + bytes([0, len(section)]) + section)
    return target


def test_the_same_module_gives_the_same_digests(tools: dict[str, str], built: dict[str, Any],
                                                modules: list[Path], tmp_path: Path) -> None:
    # Another copy of the module, at another path, with another mtime: same bytes, same image.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy = elsewhere / modules[0].name
    shutil.copyfile(modules[0], copy)
    os.utime(copy, (1_000_000_000, 1_000_000_000))
    again, _ = build(tmp_path / "again", [copy])
    first = _data_image(built)
    second = again["toolseal"]
    for key in ("manifest", "layer"):
        assert second[key] == first[key]
    assert second["compat"]["manifest"] == first["compat"]["manifest"]
    for kind in ("archive",):
        assert Path(second[kind]).read_bytes() == Path(first[kind]).read_bytes()
        assert (Path(second["compat"][kind]).read_bytes()
                == Path(first["compat"][kind]).read_bytes())
    files = sorted(p.relative_to(first["layout"]) for p in Path(first["layout"]).rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second["layout"]) for p in Path(second["layout"]).rglob("*")
                           if p.is_file())
    for rel in files:
        assert (Path(second["layout"]) / rel).read_bytes() == (Path(first["layout"]) / rel).read_bytes()
    # Building again into the same directory replaces the previous output with the same.
    rebuilt, _ = build(tmp_path / "again", [copy])
    assert rebuilt["toolseal"]["manifest"] == first["manifest"]

    # One byte of difference in the module is another image.
    other = _with_custom_section(modules[0], elsewhere / "toolseal_plugin.wasm", b"x")
    changed, _ = build(tmp_path / "changed", [other])
    assert changed["toolseal"]["manifest"] != first["manifest"]
    assert changed["toolseal"]["layer"] == _sha256(other.read_bytes()) != first["layer"]


def test_a_second_module_is_one_more_argument(tools: dict[str, str], modules: list[Path],
                                              tmp_path: Path) -> None:
    admin = _with_custom_section(modules[0], tmp_path / "toolseal_admin.wasm", b"admin")
    images, printed = build(tmp_path / "two", [modules[0], admin])
    assert sorted(images) == ["toolseal", "toolseal-admin"]
    assert images["toolseal-admin"]["layer"] == _sha256(admin.read_bytes())
    assert images["toolseal"]["manifest"] != images["toolseal-admin"]["manifest"]
    for image in images.values():
        raw = skopeo("inspect", "--raw", f"oci-archive:{image['archive']}").stdout
        assert _sha256(raw) == image["manifest"]
    assert printed.count("  manifest sha256:") == 2


def test_refuses_what_it_cannot_package_and_removes_only_its_own_output(tmp_path: Path) -> None:
    not_wasm = tmp_path / "toolseal_plugin.wasm"
    not_wasm.write_bytes(b"#!/bin/sh\necho not a module\n")
    result = subprocess.run([str(SCRIPT), str(not_wasm), "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout) == (1, "")
    assert "not a WebAssembly core module" in result.stderr
    missing = subprocess.run([str(SCRIPT), str(tmp_path / "nope.wasm"), "--out", str(tmp_path / "out2")],
                             capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert not (tmp_path / "out2").exists()
    # A directory in the way that is not an image layout this script wrote stays untouched.
    out = tmp_path / "out3"
    (out / "toolseal").mkdir(parents=True)
    (out / "toolseal" / "precious.txt").write_text("keep me")
    wasm = envoyctl.REPO / envoyctl.DEFAULT_WASM
    source = Path(os.environ.get("TOOLSEAL_WASM", wasm))
    if not source.is_file():
        pytest.skip(f"{source} is not built")
    blocked = subprocess.run([str(SCRIPT), str(source), "--out", str(out)],
                             capture_output=True, text=True, timeout=60, check=False)
    assert blocked.returncode == 1 and "not removing it" in blocked.stderr
    assert (out / "toolseal" / "precious.txt").read_text() == "keep me"


def _load_all(path: Path) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(path.read_text()))


def test_the_manifests_pin_the_image_by_its_manifest_digest() -> None:
    """Istio and Envoy Gateway compare a pinned OCI digest with the *manifest* digest (what the
    script prints as `manifest`), not with the sha256 of the .wasm: both manifests name the
    image by that digest, and Envoy Gateway's `sha256` repeats it."""
    [istio] = _load_all(ISTIO)
    [admin] = [d for d in _load_all(ISTIO_ADMIN) if d["kind"] == "WasmPlugin"]
    url = istio["spec"]["url"]
    assert url.startswith("oci://")
    istio_ref = DIGEST_REF.match(url.removeprefix("oci://"))
    assert istio_ref, url
    assert admin["spec"]["url"] == url
    [gateway] = _load_all(GATEWAY)
    [wasm] = gateway["spec"]["wasm"]
    gateway_ref = DIGEST_REF.match(wasm["code"]["image"]["url"])
    assert gateway_ref, wasm["code"]["image"]["url"]
    assert wasm["code"]["image"]["sha256"] == gateway_ref["hex"] == istio_ref["hex"]
    assert gateway_ref["repo"] == istio_ref["repo"]

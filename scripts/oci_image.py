#!/usr/bin/env python3
"""Packages toolseal's .wasm module(s) as OCI images, the way Istio and Envoy Gateway pull them.

Usage: scripts/oci-image.sh [WASM ...] [--out DIR]   (see that script)

For each module it writes, under DIR (default target/oci):

- ``NAME/``: an OCI image layout (``oci-layout``, ``index.json``, ``blobs/sha256/...``);
- ``NAME.oci.tar``: the same layout as one tarball (skopeo's ``oci-archive:`` transport);
- ``NAME-compat/``, ``NAME-compat.oci.tar``: the same module as the "compat" variant;

where NAME is the file name without ``.wasm`` and a ``_plugin`` suffix, ``_`` written ``-``
(``toolseal_plugin.wasm`` -> ``toolseal``, ``toolseal_admin.wasm`` -> ``toolseal-admin``).
It prints, per module, the manifest digest (what a registry reference ``@sha256:...``, Istio's
``WasmPlugin`` url and Envoy Gateway's ``code.image.sha256`` pin) and the layer digest, which
is the sha256 of the .wasm itself; and writes them all to ``DIR/images.json``.

The image is the Wasm artifact variant that Istio's and Envoy Gateway's image fetchers (the
same code) read as "oci": manifest config ``application/vnd.module.wasm.config.v1+json``
(the runtime config: type ``envoy_proxy``, the module's proxy-wasm ABI export, root id), and
exactly two layers, that config again and the module as
``application/vnd.module.wasm.content.layer.v1+wasm`` (the fetchers require two layers and take
the one with the wasm media type); its layer is the .wasm byte for byte. The "compat" variant
is a standard image whose single ``application/vnd.oci.image.layer.v1.tar+gzip`` layer holds
``plugin.wasm``: the format Envoy Gateway's documentation describes, and the one for
registries or tools that refuse custom media types. Both fetchers read both.

Reproducible: the output is a function of the module's bytes alone. JSON is canonical (sorted
keys, no whitespace), there are no timestamps anywhere (tar entries have mtime 0, uid/gid 0,
no user names; the compat layer's gzip header has mtime 0 and no file name), so the same
.wasm gives the same digests on any machine (the compat layer's gzip bytes also depend on the
zlib build; the artifact variant has no compression at all).

No network, no daemon: the blobs are written here, with the standard library.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WASM = REPO / "target" / "wasm32-wasip1" / "wasm" / "toolseal_plugin.wasm"
DEFAULT_OUT = REPO / "target" / "oci"
ROOT_ID = "toolseal"

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
WASM_CONFIG = "application/vnd.module.wasm.config.v1+json"
WASM_LAYER = "application/vnd.module.wasm.content.layer.v1+wasm"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
TITLE = "org.opencontainers.image.title"
REF_NAME = "org.opencontainers.image.ref.name"
# The one tag in each layout: `skopeo ... oci:DIR` (no tag) also finds it, being the only one.
REF = "latest"


class ImageError(Exception):
    """The input cannot be packaged; the message says why."""


def canonical_json(value: Any) -> bytes:
    """One byte sequence per value: sorted keys, no whitespace, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def descriptor(media_type: str, data: bytes, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    desc: dict[str, Any] = {"mediaType": media_type, "digest": sha256(data), "size": len(data)}
    if annotations:
        desc["annotations"] = annotations
    return desc


def _leb128(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ImageError("truncated LEB128 number")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def wasm_exports(module: bytes) -> list[str]:
    """The export names of a core WebAssembly module (refuses anything else)."""
    if module[:8] != b"\0asm\x01\0\0\0":
        raise ImageError("not a WebAssembly core module (no \\0asm version 1 header)")
    pos, names = 8, []
    while pos < len(module):
        section, pos = module[pos], pos + 1
        size, pos = _leb128(module, pos)
        end = pos + size
        if end > len(module):
            raise ImageError("truncated section")
        if section == 7:  # export section: count, then (name, kind, index) entries
            count, p = _leb128(module, pos)
            for _ in range(count):
                length, p = _leb128(module, p)
                names.append(module[p:p + length].decode("utf-8"))
                p += length + 1  # name, kind byte
                _, p = _leb128(module, p)
        pos = end
    return names


def runtime_config(module: bytes) -> bytes:
    """The Wasm artifact config: the runtime it is for, the ABI it exports, its root id."""
    abi = sorted(name for name in wasm_exports(module) if name.startswith("proxy_abi_version_"))
    if not abi:
        raise ImageError("not a proxy-wasm module: it exports no proxy_abi_version_* marker")
    return canonical_json({"type": "envoy_proxy", "abiVersions": abi,
                           "config": {"root_ids": [ROOT_ID]}})


def artifact_image(module: bytes) -> tuple[dict[str, bytes], bytes]:
    """(blobs by digest, manifest) of the Wasm artifact ("oci") variant."""
    config = runtime_config(module)
    manifest = canonical_json({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": descriptor(WASM_CONFIG, config),
        "layers": [descriptor(WASM_CONFIG, config, {TITLE: "runtime-config.json"}),
                   descriptor(WASM_LAYER, module, {TITLE: "plugin.wasm"})],
        "annotations": {"module.wasm.runtime/type": "envoy_proxy",
                        "module.wasm.runtime/abi_version": json.loads(config)["abiVersions"][0]},
    })
    return {sha256(config): config, sha256(module): module}, manifest


def _tar_info(name: str, size: int, directory: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.uid, info.gid, info.uname, info.gname = size, 0, 0, 0, "", ""
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = 0o755 if directory else 0o644
    return info


def compat_image(module: bytes) -> tuple[dict[str, bytes], bytes]:
    """(blobs, manifest) of the "compat" variant: one tar+gzip layer holding plugin.wasm."""
    runtime_config(module)  # the same checks
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar.addfile(_tar_info("plugin.wasm", len(module)), io.BytesIO(module))
    layer_tar = raw.getvalue()
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, compresslevel=9, mtime=0) as gz:
        gz.write(layer_tar)
    layer = packed.getvalue()
    config = canonical_json({"architecture": "wasm", "os": "wasip1", "config": {},
                             "rootfs": {"type": "layers", "diff_ids": [sha256(layer_tar)]}})
    manifest = canonical_json({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": descriptor(OCI_CONFIG, config),
        "layers": [descriptor(OCI_LAYER_GZIP, layer)],
        "annotations": {"module.wasm.image/variant": "compat"},
    })
    return {sha256(config): config, sha256(layer): layer}, manifest


def layout_files(blobs: dict[str, bytes], manifest: bytes) -> dict[str, bytes]:
    """Every file of the OCI image layout, by relative path."""
    index = canonical_json({"schemaVersion": 2, "mediaType": INDEX,
                            "manifests": [descriptor(MANIFEST, manifest, {REF_NAME: REF})]})
    files = {"oci-layout": canonical_json({"imageLayoutVersion": "1.0.0"}), "index.json": index}
    for digest, data in {**blobs, sha256(manifest): manifest}.items():
        files["blobs/sha256/" + digest.split(":", 1)[1]] = data
    return files


def archive(files: dict[str, bytes]) -> bytes:
    """The layout as one uncompressed tar, entries sorted, no timestamps or owners."""
    dirs = sorted({str(Path(p).parent) for p in files if "/" in p} | {"blobs"})
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted([*dirs, *files]):
            if name in files:
                tar.addfile(_tar_info(name, len(files[name])), io.BytesIO(files[name]))
            else:
                tar.addfile(_tar_info(name, 0, directory=True))
    return out.getvalue()


def image_name(wasm: Path) -> str:
    stem = wasm.name.removesuffix(".wasm").removesuffix("_plugin")
    return stem.replace("_", "-")


def _replace(path: Path, is_ours: bool) -> None:
    """Remove a previous output before writing a new one; never anything that is not ours."""
    if path.is_dir():
        if not (path / "oci-layout").is_file():
            raise ImageError(f"{path} exists and is not an OCI layout this script wrote: not removing it")
        shutil.rmtree(path)
    elif path.exists():
        if not is_ours:
            raise ImageError(f"{path} exists and is not an oci-archive: not removing it")
        path.unlink()


def write_image(out: Path, name: str, blobs: dict[str, bytes], manifest: bytes) -> dict[str, str]:
    files = layout_files(blobs, manifest)
    layout, tarball = out / name, out / f"{name}.oci.tar"
    _replace(layout, False)
    _replace(tarball, tarball.name.endswith(".oci.tar"))
    for rel, data in files.items():
        target = layout / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    tarball.write_bytes(archive(files))
    return {"layout": str(layout), "archive": str(tarball), "manifest": sha256(manifest)}


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def build(wasm_paths: list[Path], out: Path) -> list[dict[str, Any]]:
    names = [image_name(p) for p in wasm_paths]
    written = names + [f"{name}-compat" for name in names]
    if len(set(written)) != len(written):
        raise ImageError(f"two images would get the same name: {sorted(written)}")
    for wasm in wasm_paths:
        if not wasm.is_file():
            raise ImageError(f"{wasm} does not exist (build it with scripts/build-wasm.sh)")
    out.mkdir(parents=True, exist_ok=True)
    images = []
    for wasm, name in zip(wasm_paths, names):
        module = wasm.read_bytes()
        entry: dict[str, Any] = {"name": name, "wasm": str(wasm), "wasm_size": len(module),
                                 "layer": sha256(module), "media_type": WASM_LAYER}
        entry.update(write_image(out, name, *artifact_image(module)))
        written = write_image(out, f"{name}-compat", *compat_image(module))
        entry["compat"] = {**written, "plugin.wasm": sha256(module)}
        images.append(entry)
    (out / "images.json").write_bytes(canonical_json({"images": images}) + b"\n")
    return images


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/oci-image.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("wasm", nargs="*", type=Path,
                        help=f"modules to package (default: {DEFAULT_WASM.relative_to(REPO)})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: target/oci)")
    args = parser.parse_args(argv)
    try:
        images = build(args.wasm or [DEFAULT_WASM], args.out)
    except (ImageError, OSError, UnicodeDecodeError) as err:
        print(f"oci-image: {err}", file=sys.stderr)
        return 1
    for image in images:
        print(f"{image['name']}: {_display(Path(image['wasm']))} ({image['wasm_size']} bytes)")
        print(f"  manifest {image['manifest']}")
        print(f"  layer    {image['layer']}  (= sha256 of the .wasm, {WASM_LAYER})")
        print(f"  layout   {_display(Path(image['layout']))}   archive {_display(Path(image['archive']))}")
        print(f"  compat   {image['compat']['manifest']}  (tar+gzip layer with plugin.wasm) "
              f"archive {_display(Path(image['compat']['archive']))}")
        print(f"  push:    skopeo copy oci-archive:{_display(Path(image['archive']))} "
              f"docker://REGISTRY/{image['name']}")
        print(f"  pull:    oci://REGISTRY/{image['name']}@{image['manifest']}")
    print(f"written: {_display(args.out / 'images.json')}")
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env bash
# Packages the plugin .wasm as an OCI image, the way fleets consume Wasm: Istio's WasmPlugin
# (`url: oci://...`) and Envoy Gateway's EnvoyExtensionPolicy (`code.type: Image`) pull it from
# a registry. Writes an OCI image layout and an oci-archive tarball per module, with
# reproducible digests (the same .wasm gives the same digests), and prints the manifest digest
# to pin and the layer digest (the sha256 of the .wasm). No network, no container daemon:
# scripts/oci_image.py writes every blob itself. Push with skopeo (docs/fleet.md).
#
# Usage: scripts/oci-image.sh [WASM ...] [--out DIR]
#   WASM      modules to package; default the data module
#             target/wasm32-wasip1/wasm/toolseal_plugin.wasm (scripts/build-wasm.sh builds it).
#             A second module (e.g. an admin module) is one more argument: one image each.
#   --out     output directory (default target/oci): NAME/ (layout), NAME.oci.tar (archive),
#             the same as NAME-compat/ and NAME-compat.oci.tar in the "compat" variant (one
#             tar+gzip layer holding plugin.wasm), images.json (every digest)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "${PYTHON:-python3}" "$repo/scripts/oci_image.py" "$@"

#!/usr/bin/env bash
# Builds shell-operator from a local copy of its source (a tag of a git
# repository: a bare or mirror git dir, or a checkout), once per user, tag and
# commit, and prints the path of the binary. It is how a reference the Go
# module proxy does not serve is built: v1.15.0 and later need
# github.com/deckhouse/module-sdk at a version the proxy does not serve
# either, so module-sdk is built from a local copy of its source too, at the
# version the tag's go.mod requires (a `replace` to the exported tree).
#
# Opt-in: CI builds from the module proxy alone (hack/tools/shell-operator.sh,
# the pinned reference); this needs both sources on the machine. See
# docs/development.md for where to get them.
#
# Usage: shell-operator-src.sh [--path]
#   SHELL_OPERATOR_SRC  git dir or checkout of github.com/flant/shell-operator (required)
#   MODULE_SDK_SRC      git dir or checkout of github.com/deckhouse/module-sdk
#                       (required when the tag's go.mod requires module-sdk)
#   REF                 the tag to build (default v1.20.3); the binary must report it
#   --path              print where the binary goes, building nothing
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/shell-operator-src-<REF>/shell-operator
# Go modules other than module-sdk come from GOPROXY, checked against the
# tag's go.sum.
set -euo pipefail

pkg=github.com/flant/shell-operator
sdk=github.com/deckhouse/module-sdk
ref=${REF:-v1.20.3}
die() { echo "shell-operator-src.sh: $*" >&2; exit 1; }
log() { printf '%s shell-operator-src.sh: %s\n' "$(date +%T)" "$*" >&2; }

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/shell-operator-src-$ref"
if [[ "${1:-}" == "--path" ]]; then
  echo "$out/shell-operator"
  exit 0
fi
[[ $# -eq 0 ]] || die "unexpected arguments $*; the sources and the tag are the variables SHELL_OPERATOR_SRC, MODULE_SDK_SRC and REF"

[[ -n "${SHELL_OPERATOR_SRC:-}" ]] || die "set SHELL_OPERATOR_SRC to a git dir or checkout of $pkg (see docs/development.md)"
# commit resolves a tag in a git dir or checkout, failing with what to do.
commit() {
  git -C "$1" rev-parse --verify --quiet "$2^{commit}" ||
    die "$1 has no tag $2 (git -C $1 fetch --tags, or another ${3}_SRC)"
}
so_commit=$(commit "$SHELL_OPERATOR_SRC" "$ref" SHELL_OPERATOR)
gomod=$(git -C "$SHELL_OPERATOR_SRC" show "$ref:go.mod")
grep -q "^module $pkg\$" <<<"$gomod" || die "$SHELL_OPERATOR_SRC at $ref is not $pkg"
sdk_version=$(awk -v m="$sdk" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' <<<"$gomod")
if [[ -n "$sdk_version" ]]; then
  [[ -n "${MODULE_SDK_SRC:-}" ]] || die "$ref requires $sdk $sdk_version; set MODULE_SDK_SRC to a git dir or checkout of it (see docs/development.md)"
  sdk_commit=$(commit "$MODULE_SDK_SRC" "$sdk_version" MODULE_SDK)
fi
# The cached binary is the one of these commits; a tag moved elsewhere
# builds again.
stamp="$so_commit ${sdk_commit:-}"
if [[ -f "$out/.complete" && "$(cat "$out/.complete")" == "$stamp" ]]; then
  echo "$out/shell-operator"
  exit 0
fi

mkdir -p "$cache/bin"
exec 9>"$cache/bin/.shell-operator-src-$ref.lock"
flock 9
if [[ -f "$out/.complete" && "$(cat "$out/.complete")" == "$stamp" ]]; then
  echo "$out/shell-operator"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-shell-operator-src-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/shell-operator" "$tmp/bin"
git -C "$SHELL_OPERATOR_SRC" archive "$so_commit" | tar -x -C "$tmp/src/shell-operator"
if [[ -n "$sdk_version" ]]; then
  mkdir -p "$tmp/src/module-sdk"
  git -C "$MODULE_SDK_SRC" archive "$sdk_commit" | tar -x -C "$tmp/src/module-sdk"
  grep -q "^module $sdk\$" "$tmp/src/module-sdk/go.mod" || die "$MODULE_SDK_SRC at $sdk_version is not $sdk"
  (cd "$tmp/src/shell-operator" && go mod edit -replace "$sdk=../module-sdk")
fi

log "building shell-operator $ref (${so_commit:0:12}) from $SHELL_OPERATOR_SRC${sdk_version:+, $sdk $sdk_version from $MODULE_SDK_SRC}"
# As its own release build does, the binary reports its version.
(cd "$tmp/src/shell-operator" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath -buildvcs=false" \
  go build -ldflags "-s -w -X $pkg/pkg/app.Version=$ref" -o "$tmp/bin/shell-operator" ./cmd/shell-operator)

# Read the whole output before matching it (see shell-operator.sh).
reported=$("$tmp/bin/shell-operator" version 2>&1)
[[ "$reported" == *"shell-operator $ref"* ]] || die "the built shell-operator does not report $ref: $reported"
echo "$stamp" >"$tmp/bin/.complete"
rm -rf "$out"
mv "$tmp/bin" "$out"
log "shell-operator $ref ready"
echo "$out/shell-operator"

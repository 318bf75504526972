#!/usr/bin/env bash
# make demo: start `cairn dev --sandbox` (embedded Temporal + UI, a worker,
# the starter API, a local Kubernetes control plane with a CSI driver), seed
# a sample application with a volume of files, back it up with its volume
# snapshotted and the data moved into the location's kopia repository,
# restore it (data included) into a copy of its namespace, create
# an hourly schedule and trigger it, snapshot the sandbox's etcd, print the
# summaries, and keep the stack up for inspection until Ctrl-C.
set -euo pipefail
cairn=${1:-bin/cairn}
data_dir=${CAIRN_DATA_DIR:-.cairn}
api=${CAIRN_API_ADDRESS:-127.0.0.1:8080}
mkdir -p "$data_dir"
log="$data_dir/dev.log"

for port in 7233 8233 "${api##*:}"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "Port $port is already in use (another cairn dev or Temporal?). Stop it first." >&2
		exit 1
	fi
done

"$cairn" dev --sandbox --data-dir "$data_dir" --api-address "$api" >"$log" 2>&1 &
dev=$!
stop_dev() { echo; echo "Stopping cairn dev (pid $dev)..."; kill -TERM $dev 2>/dev/null; wait $dev 2>/dev/null; }
trap 'stop_dev; exit 0' INT TERM
# A step that fails stops the stack too, instead of leaving it running.
trap 'status=$?; if [ $status -ne 0 ]; then stop_dev; fi' EXIT

echo "Starting cairn dev --sandbox (log: $log) ..."
# The starter API listens last, once Temporal and the sandbox are up.
up() { (exec 3<>"/dev/tcp/${api%:*}/${api##*:}") 2>/dev/null; }
for _ in $(seq 1 180); do
	if up; then break; fi
	if ! kill -0 $dev 2>/dev/null; then
		echo "cairn dev exited; last lines of $log:" >&2
		tail -20 "$log" >&2
		exit 1
	fi
	sleep 1
done
up || { echo "cairn dev did not come up; see $log" >&2; kill $dev; exit 1; }
sed -n '/cairn dev is up/,/Press Ctrl-C/p' "$log"

kubeconfig="$data_dir/sandbox/kubeconfig"
csi_dir="$data_dir/sandbox/csi"
writer=()
grep -q "node cairn-node" "$log" && writer=(--writer-pod) # a pod on the node writes the claim's files
if [ -d "$csi_dir" ]; then
	go run ./tests/sample --kubeconfig "$kubeconfig" --namespace shop --csi-state-dir "$csi_dir" "${writer[@]}"
	volume_flags=(--snapshot-move-data --native-snapshots delete)
else
	go run ./tests/sample --kubeconfig "$kubeconfig" --namespace shop
	volume_flags=()
fi

# With the sandbox's node the shop's pods really run.
kubectl="${CAIRN_KUBE_BIN_DIR:-.cache/kube/bin}/kubectl"
if [ -x "$kubectl" ] && grep -q "node cairn-node" "$log"; then
	for _ in $(seq 1 90); do
		phases=$("$kubectl" --kubeconfig "$kubeconfig" get pods -n shop -l app=shop -o jsonpath='{.items[*].status.phase}')
		[ "$phases" = "Running Running" ] && break
		sleep 1
	done
	echo
	echo "\$ kubectl get pods -n shop -o wide"
	"$kubectl" --kubeconfig "$kubeconfig" get pods -n shop -o wide
fi

name="shop-$(date -u +%Y%m%d-%H%M%S)"
echo
# --direct: the run straight through Temporal, whatever cluster a kubeconfig
# of this machine names (where one serves cairn's resources, a create makes
# a resource there).
echo "\$ cairn backup create $name --include-namespaces shop ${volume_flags[*]} --wait --direct"
set +e
"$cairn" backup create "$name" --include-namespaces shop "${volume_flags[@]}" --wait --direct --data-dir "$data_dir"
set -e
echo
echo "\$ cairn backup list"
"$cairn" backup list --data-dir "$data_dir"
echo
echo "\$ cairn backup verify $name"
"$cairn" backup verify "$name" --data-dir "$data_dir"

restore="$name-copy"
copy="shop-copy-$(date -u +%H%M%S)"
echo
echo "\$ cairn restore create $restore --from-backup $name --namespace-mappings shop:$copy --wait --direct"
set +e
"$cairn" restore create "$restore" --from-backup "$name" --namespace-mappings "shop:$copy" --wait --direct --data-dir "$data_dir"
set -e
echo
echo "\$ cairn restore describe $restore"
"$cairn" restore describe "$restore" --data-dir "$data_dir"

echo
echo "\$ cairn schedule create shop-hourly --cron @hourly --include-namespaces shop --keep-last 24 --max-run-duration 10m"
set +e
"$cairn" schedule create shop-hourly --cron @hourly --include-namespaces shop --keep-last 24 --max-run-duration 10m \
	--data-dir "$data_dir" 2>&1 | sed 's/^/  /' # exit 3 on a rerun: it exists already
echo "\$ cairn schedule trigger shop-hourly"
"$cairn" schedule trigger shop-hourly --data-dir "$data_dir"
sleep 5
echo "\$ cairn schedule describe shop-hourly"
"$cairn" schedule describe shop-hourly --data-dir "$data_dir"

snap="etcd-$(date -u +%Y%m%d-%H%M%S)"
echo
echo "\$ cairn etcd-snapshot create $snap --wait"
"$cairn" etcd-snapshot create "$snap" --wait --data-dir "$data_dir"
set -e

echo
echo "Inspect the runs in the Temporal UI: http://127.0.0.1:8233"
echo "Try: $cairn backup describe $name --data-dir $data_dir"
echo "     $cairn restore describe $restore --data-dir $data_dir"
echo "     curl -s -H \"Authorization: Bearer \$(cat $data_dir/api-token)\" http://$api/v1/backups | head"
echo "     curl -s -H \"Authorization: Bearer \$(cat $data_dir/api-token)\" http://$api/metrics | grep ^cairn_"
echo "     KUBECONFIG=$kubeconfig $kubectl get all -n shop"
echo "The stack stays up; press Ctrl-C to stop it."
wait $dev

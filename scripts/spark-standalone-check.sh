#!/usr/bin/env bash
# spark-standalone-check.sh: the README's cluster recipe on a real Spark standalone cluster on this
# machine. Builds the spark module's assembly jar, makes a SPARK_HOME from Maven Central's Spark
# jars (scripts/spark-standalone/pom.xml), starts a master and WORKERS workers of one core each,
# submits `generate` through spark-submit's main class (org.apache.spark.deploy.SparkSubmit) in
# client mode on the default model, given as a path every executor reads, then checks the output:
# one row per input row, none in error, each equal to the same job in local mode, written by
# executors that ran in the workers' own JVMs (with libllmzoo-mkl-cpu.so preloaded through
# spark.executorEnv.LD_PRELOAD where bin/llmzoo would preload it). Then the same job with the model
# as a Hugging Face id, which executors resolve from a pre-filled cache (spark.executorEnv.HF_HUB_CACHE)
# with HF_HUB_OFFLINE=1, as on an air-gapped cluster: the same rows. Stops what it started, by process id, whatever happens. Prints one line, "ok: ..."
# or "error: ...", and exits non-zero on failure.
#
#   scripts/spark-standalone-check.sh [ROWS] [WORKERS]    (defaults: 48 rows, 2 workers)
#
# Offline once Maven has the jars; MAVEN_OPTS is passed to Maven as given. Leaves the last run's
# logs, work folders and output under spark/target/spark-standalone.
set -euo pipefail
# Plain text from Maven (see bin/lib/launch.sh).
export MAVEN_OPTS="${MAVEN_OPTS:-} -Djansi.noreset=true"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rows="${1:-48}"
workers="${2:-2}"
export OPT_OUT_TRACKING=true
source "$root/bin/lib/launch.sh"

fail() { echo "error: $*" >&2; exit 1; }
[[ "$rows" =~ ^[1-9][0-9]*$ ]] || fail "ROWS must be a positive number, not '$rows'"
[[ "$workers" =~ ^[1-9]$ ]] || fail "WORKERS must be 1 to 9, not '$workers'"

version="$(sed -n 's:^  <version>\(.*\)</version>:\1:p' "$root/pom.xml" | head -1)"
spark_version="$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$root/pom.xml")"
spark_opts="$(sed -n 's:.*<spark.java.options>\(.*\)</spark.java.options>.*:\1:p' "$root/pom.xml")"
jar="$root/spark/target/spark-$version-assembly.jar"
base="$root/spark/target/spark-standalone"
home="$base/spark-home"

# The assembly jar, rebuilt when a source is newer (as the launchers rebuild their modules).
if [ ! -f "$jar" ] || [ -n "$(find "$root" -name target -prune -o \( -name '*.java' -o -name 'pom.xml' -o -path '*/src/main/resources/*' -o -path '*/src/main/native/*' \) -newer "$jar" -print -quit)" ]; then
  echo "building the assembly jar..." >&2
  (cd "$root" && mvn -q -B -Dstyle.color=never -P assembly -pl spark -am package -DskipTests) >&2
fi
# A SPARK_HOME whose jars/ holds Spark's jars: the workers build their executors' class path from it.
if [ ! -d "$home/jars" ] || [ "$root/scripts/spark-standalone/pom.xml" -nt "$home/jars" ]; then
  echo "copying Spark $spark_version's jars into $home/jars..." >&2
  rm -rf "$home.tmp" && mkdir -p "$home.tmp"
  mvn -q -B -Dstyle.color=never -f "$root/scripts/spark-standalone/pom.xml" -Dspark.version="$spark_version" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies -DoutputDirectory="$home.tmp/jars" >&2
  rm -rf "$home" && mv "$home.tmp" "$home"
fi

# Only the last run is kept: each executor's work folder holds a copy of the 150 MB jar.
rm -rf "$base"/run-*
run="$base/run-$$"
mkdir -p "$run"
pids=()
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
}
trap stop_all EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Master and workers as a distribution's sbin scripts start them (spark-class: Java 17's flags, the
# jars/ folder), without the MKL preload: executors get it from the application's executorEnv only.
export SPARK_HOME="$home" SPARK_SCALA_VERSION=2.13 SPARK_LOG_DIR="$run" SPARK_LOCAL_IP=127.0.0.1
daemon() {
  local name="$1"; shift
  env -u LD_PRELOAD java -Xmx512m $spark_opts -cp "$home/jars/*" "$@" > "$run/$name.log" 2>&1 &
  pids+=($!)
}
port="$(free_port)"
master="spark://127.0.0.1:$port"
daemon master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$port" --webui-port 0
for _ in $(seq 1 60); do grep -q "I have been elected leader" "$run/master.log" && break; sleep 0.5; done
grep -q "I have been elected leader" "$run/master.log" || fail "the master did not start: $run/master.log"
for w in $(seq 1 "$workers"); do
  daemon "worker-$w" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 --memory 3g \
    --webui-port 0 --work-dir "$run/work-$w" "$master"
done
for w in $(seq 1 "$workers"); do
  for _ in $(seq 1 60); do grep -q "Successfully registered with master" "$run/worker-$w.log" && break; sleep 0.5; done
  grep -q "Successfully registered with master" "$run/worker-$w.log" || fail "worker $w did not register: $run/worker-$w.log"
done

# The input: ROWS prompts of several lengths (batches are left-padded), one of them empty.
python3 - "$rows" > "$run/prompts.jsonl" <<'EOF'
import json, sys
openings = ["Once upon a time", "The little dog", "One day, Lily", "Tom saw a big", "In the garden there was",
            "The sun was", "Mia and her friend", "A small bird"]
adjectives = ["happy", "little", "red", "brave", "sleepy", "kind", "tiny", "old"]
for i in range(int(sys.argv[1])):
    prompt = "" if i == 1 else openings[i % 8] + " and the " + adjectives[i // 8 % 8] + " " + adjectives[i // 64 % 8]
    print(json.dumps({"id": i, "prompt": prompt}))
EOF
job=(generate --input "$run/prompts.jsonl" --format jsonl --greedy --max-new-tokens 16 --batch-size 4
     --partitions $((workers * 2)))

# A Hugging Face cache holding the default model as llmzoo-check/default (refs/main naming a
# snapshot of its files), as the zoo leaves one after a download.
commit="$(printf '%040d' 0)"
snapshot="$run/hf-cache/models--llmzoo-check--default/snapshots/$commit"
mkdir -p "$snapshot" "$run/hf-cache/models--llmzoo-check--default/refs"
cp "$root"/models/default/* "$snapshot/"
printf %s "$commit" > "$run/hf-cache/models--llmzoo-check--default/refs/main"

# The MKL preload as bin/llmzoo decides it, for the driver and (through executorEnv) the executors.
LD_PRELOAD_BEFORE="${LD_PRELOAD:-}"
mkl_cpu_fix
preload="${LD_PRELOAD:-}"
export LD_PRELOAD="$LD_PRELOAD_BEFORE"
[ -n "$LD_PRELOAD" ] || unset LD_PRELOAD
executor_env=(--conf spark.executorEnv.OMP_NUM_THREADS=1 --conf spark.executorEnv.OMP_WAIT_POLICY=PASSIVE
              --conf spark.executorEnv.OPT_OUT_TRACKING=true
              --conf spark.executorEnv.MALLOC_MMAP_THRESHOLD_=268435456
              --conf spark.executorEnv.MALLOC_TRIM_THRESHOLD_=1073741824)
[ -z "$preload" ] || executor_env+=(--conf spark.executorEnv.LD_PRELOAD="$preload")

# What bin/spark-submit runs: Java 17's --add-opens flags on the driver, then SparkSubmit.
submit() {
  env ${preload:+LD_PRELOAD="$preload"} OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE \
    java -Xmx2g $spark_opts -Dai.djl.pytorch.num_threads=1 -DOPT_OUT_TRACKING=true \
    -Dorg.slf4j.simpleLogger.log.ai.djl.util.cuda.CudaUtils=error \
    -cp "$home/conf:$home/jars/*" org.apache.spark.deploy.SparkSubmit "$@"
}

# Record, while the job runs, which executor JVMs (children of the workers) map the preloaded library.
watch_executors() {
  while :; do
    for pid in $(pgrep -P "$(IFS=,; echo "${pids[*]:1}")" 2> /dev/null); do
      if grep -q "CoarseGrainedExecutorBackend" "/proc/$pid/cmdline" 2> /dev/null; then
        echo "$pid $(grep -c libllmzoo-mkl-cpu.so "/proc/$pid/maps" 2> /dev/null || true)"
      fi
    done
    sleep 0.5
  done > "$run/executors.txt"
}
watch_executors &
watcher=$!
pids+=("$watcher")

submit_to_cluster() {
  local name="$1"; shift
  submit --master "$master" --deploy-mode client --name "llmzoo-standalone-check-$name" \
    --class io.github.djlllmzoo.spark.LlmZooSpark \
    --conf spark.executor.cores=1 --conf spark.task.cpus=1 --conf spark.executor.memory=2g \
    --conf spark.executor.extraJavaOptions="-Dai.djl.pytorch.num_threads=1 -DOPT_OUT_TRACKING=true -Dorg.slf4j.simpleLogger.log.ai.djl.util.cuda.CudaUtils=error" \
    "${executor_env[@]}" "$@" > "$run/$name.log" 2>&1 \
    || fail "spark-submit ($name) on $master failed: $(grep -m1 '^error:' "$run/$name.log" || tail -3 "$run/$name.log")"
}
start=$(date +%s.%N)
submit_to_cluster cluster "$jar" "${job[@]}" --model "$root/models/default" --output "$run/cluster"
seconds=$(python3 -c "import time; print(round(time.time() - $start, 1))")
kill "$watcher"; wait "$watcher" 2> /dev/null || true
submit_to_cluster hf-cache --conf spark.executorEnv.HF_HUB_CACHE="$run/hf-cache" --conf spark.executorEnv.HF_HUB_OFFLINE=1 \
  "$jar" "${job[@]}" --model llmzoo-check/default --output "$run/hf-cache-out"

submit --master 'local[1]' --class io.github.djlllmzoo.spark.LlmZooSpark "$jar" "${job[@]}" --model "$root/models/default" --output "$run/local" \
  > "$run/local.log" 2>&1 || fail "the local run failed: $(tail -3 "$run/local.log")"

python3 - "$run" "$rows" "$workers" "${preload:+yes}" "$seconds" <<'EOF'
import glob, json, os, sys
run, rows, workers, preload, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def read(name):
    out = {}
    for f in glob.glob(os.path.join(run, name, "part-*.json")):
        for line in open(f):
            row = json.loads(line)
            if row["id"] in out:
                sys.exit(f"error: {name}: row {row['id']} written twice")
            out[row["id"]] = row
    return out
cluster, local, hf_cache = read("cluster"), read("local"), read("hf-cache-out")
if len(cluster) != rows:
    sys.exit(f"error: the cluster wrote {len(cluster)} rows, not {rows}")
if cluster[1]["error"] != "the prompt is empty":
    sys.exit(f"error: row 1 (empty prompt) has error {cluster[1]['error']!r}")
for i, row in cluster.items():
    if i != 1 and (row["error"] is not None or not row["completion_tokens"]):
        sys.exit(f"error: row {i} failed: {row}")
    if row != local.get(i):
        sys.exit(f"error: row {i} differs between the cluster and local[1]: {row} vs {local.get(i)}")
    if row != hf_cache.get(i):
        sys.exit(f"error: row {i} differs with the model from the Hugging Face cache: {row} vs {hf_cache.get(i)}")
executors = {}
for line in open(os.path.join(run, "executors.txt")):
    pid, mapped = line.split()
    executors[pid] = executors.get(pid, False) or mapped != "0"
if len(executors) != workers:
    sys.exit(f"error: {len(executors)} executor JVMs seen, not one per worker ({workers})")
if preload and not all(executors.values()):
    sys.exit(f"error: spark.executorEnv.LD_PRELOAD did not reach every executor: {executors}")
tokens = sum(r["completion_tokens"] or 0 for r in cluster.values())
print(f"ok: {rows} rows ({tokens} new tokens) through spark-submit on a standalone master and {workers} workers"
      f" in {seconds} s, each equal to local[1] and to the same job with the model from an offline Hugging Face"
      f" cache; {len(executors)} executor JVMs"
      + (", each with libllmzoo-mkl-cpu.so preloaded" if preload else ""))
EOF

# Shared by bin/llmzoo and bin/llmzoo-spark (sourced, not run): build a module on first use or when
# sources changed, and the process settings both launchers run Java with (threads, allocator, the
# MKL preload).

# build_if_needed NAME MODULE STAMP: (re)builds MODULE and what it depends on with Maven when STAMP
# is missing or older than a source (Java, pom, resources, native kernels), then writes the
# module's run-time class path to STAMP.
build_if_needed() {
  local name="$1" module="$2" stamp="$3"
  if [ -f "$stamp" ] && [ -z "$(find "$root" -name target -prune -o \( -name '*.java' -o -name 'pom.xml' -o -path '*/src/main/resources/*' -o -path '*/src/main/native/*' \) -newer "$stamp" -print -quit)" ]; then
    return 0
  fi
  echo "$name: building the project (first use or sources changed)..." >&2
  # Plain text: -Dstyle.color=never turns colours off; Maven 3.8 still resets the terminal's
  # attributes (ESC[0m) when it exits unless jansi is told not to, which only a JVM option does.
  (cd "$root" && MAVEN_OPTS="${MAVEN_OPTS:-} -Djansi.noreset=true" mvn -q -B -Dstyle.color=never install -DskipTests -pl "$module" -am) >&2
  { echo "$root/$module/target/classes"; ls "$root/$module"/target/lib/*.jar; } | paste -sd: - > "$stamp.tmp"
  mv "$stamp.tmp" "$stamp"
}

# export_runtime_settings: the environment PyTorch and glibc read at start-up. Each keeps a value
# the caller already set.
export_runtime_settings() {
  # With more than one PyTorch intra-op thread, its OpenMP threads sleep at barriers instead of
  # spinning: on a machine whose cores other processes share, spinning threads hold a core while
  # the thread they wait for cannot run, which made decoding up to ten times slower (see
  # docs/PERFORMANCE.md).
  export OMP_WAIT_POLICY="${OMP_WAIT_POLICY-PASSIVE}"
  # glibc hands freed blocks over 128 KiB back to the kernel, so every step's larger temporaries
  # (logits, activations) came back as fresh pages the kernel had to zero: a fifth of a batch-8
  # decode step, and prefill ran at a third of its speed. Keep freed memory in the process instead
  # (the heap still stops growing once a step's working set is reached). mallopt() refuses a
  # threshold above 32 MiB, but glibc (2.36 checked) takes this one from the environment; a thread's
  # arena still maps a block larger than its 64 MiB heap (docs/PERFORMANCE.md, TinyLlama's memory).
  export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_-268435456}"
  export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_-1073741824}"
  # One PyTorch intra-op thread: decode steps split their projections across the cores themselves
  # (see cpu-kernels' SplitProjection); LLMZOO_TORCH_THREADS=2 gives prefills and batches MKL's two
  # threads. OMP_NUM_THREADS gives every other thread that calls PyTorch (a server's request
  # threads, Spark's tasks) the same count; PyTorch keeps it per thread and DJL sets it on the
  # engine's first thread only.
  export OMP_NUM_THREADS="${OMP_NUM_THREADS-${LLMZOO_TORCH_THREADS:-1}}"
}

# add_decoding_java_opts COMMAND [ARGS...]: appends to the caller's array java_opts what a JVM that decodes runs with,
# each unless java_opts already sets it (docs/serving-production.md, "The CPU workers between steps" and "The
# JIT compiler and the cores"):
# - Every command but finetune: the JIT's quick compiler alone (C1, -XX:TieredStopAtLevel=1). A decode step
#   keeps every core busy (the calling thread and a CPU worker a core), and the optimizing compiler (C2)
#   compiles for tens of seconds after start-up, a few milliseconds of a core each time, preempting one of
#   them: a product's other half then waits. The decoding itself runs in native kernels either way. With C1,
#   quiet, under 32 clients the server gave 596 / 605 against 530 / 513 tokens/s and `bench` decoded int4
#   TinyLlama at 64-81 against 54-59 tokens/s. Fine-tuning keeps C2: its steps are the engine's, and it was
#   not measured. Nor on a GPU (`--device gpu`): there a decode step is the host issuing the engine's calls
#   one after another on one thread, whose Java C2 compiles faster: on an H200 `bench` decoded TinyLlama in
#   float16 at 125 tokens/s with C2 against 96 with C1 (docs/cuda.md).
# - serve: CPU workers that park 50 us after a slice instead of a millisecond. A server's decode loop
#   spends part of each step on its HTTP threads (a streamed token each row), and a worker spinning after the
#   step holds the core they need: 4-8 % more throughput under 32 clients.
add_decoding_java_opts() {
  if [ "${1:-}" = finetune ]; then
    return
  fi
  local previous="" on_gpu=false a
  for a in "$@"; do
    case "$previous=$a" in
      --device=gpu*) on_gpu=true ;;
    esac
    case "$a" in
      --device=gpu*) on_gpu=true ;;
    esac
    previous="$a"
  done
  if ! $on_gpu && [[ " ${java_opts[*]} " != *" -XX:TieredStopAtLevel="* && " ${java_opts[*]} " != *"TieredCompilation "* ]]; then
    java_opts+=(-XX:TieredStopAtLevel=1)
  fi
  if [ "${1:-}" = serve ] && [[ " ${java_opts[*]} " != *" -Dllmzoo.cpu.idleSpinNanos="* ]]; then
    java_opts+=(-Dllmzoo.cpu.idleSpinNanos=50000)
  fi
}

# mkl_cpu_fix: oneMKL inside PyTorch runs generic kernels on CPUs not made by Intel; a one-function
# library preloaded ahead of it (built with cc on first use, exported in LD_PRELOAD, so the JVM the
# launcher starts loads it) lets it use the AVX2/AVX-512 kernels the CPU has (matrix products up to
# 4x faster on AMD EPYC; see cli/src/main/native/llmzoo_mkl_cpu.c and docs/PERFORMANCE.md).
# LLMZOO_MKL_CPU_FIX=off leaves MKL alone, =on preloads it on any x86-64 Linux CPU.
mkl_cpu_fix() {
  local mode="${LLMZOO_MKL_CPU_FIX:-auto}"
  case "$mode" in
    off) return 0 ;;
    on) ;;
    auto) grep -q -m1 AuthenticAMD /proc/cpuinfo 2>/dev/null || return 0 ;;
    *) echo "error: LLMZOO_MKL_CPU_FIX must be auto, on or off, not '$mode'" >&2; exit 2 ;;
  esac
  [ "$(uname -sm)" = "Linux x86_64" ] || return 0
  local src="$root/cli/src/main/native/llmzoo_mkl_cpu.c"
  local lib="$root/cli/target/native/libllmzoo-mkl-cpu.so"
  if [ ! -f "$lib" ] || [ "$src" -nt "$lib" ]; then
    if ! command -v cc > /dev/null; then
      echo "$(basename "$0"): no C compiler (cc) to build $(basename "$lib"): MKL keeps its slower generic kernels on this CPU" >&2
      return 0
    fi
    mkdir -p "$(dirname "$lib")"
    cc -shared -fPIC -O2 -o "$lib.$$.tmp" "$src" && mv "$lib.$$.tmp" "$lib" || { rm -f "$lib.$$.tmp"; return 0; }
  fi
  export LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}"
}

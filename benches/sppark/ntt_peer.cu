// sppark's Goldilocks NTT (headers of the `sppark` crate, see run.sh) on
// the inputs that `ntt_io prep` wrote: forward NTT and iNTT + coset LDE
// (shift 7) of every column, natural order in and out, data on the device.
// Times with CUDA events, median of 15, one stream (64 calls) and three
// (columns round robin). Pass 1 also writes sampled outputs for
// `ntt_io check`; pass 2 only times (run.sh orders passes A B B A).
//
//   ntt_peer DIR PASS
//
// DIR/input.bin: u64 log_n, u64 width, then width columns of 2^log_n u64.
// DIR/sppark_times_PASS.txt: "key ms" lines, key = ntt_S or ldeB_S for
//   blowup B on S streams.
// DIR/sppark_OP.samples: the u64 at position k * 0x9E3779B97F4A7C15 mod
//   (width * rows) of the column-major output, k < 2^20 (ntt_io::sample).
#define FEATURE_GOLDILOCKS
#include <ff/goldilocks.hpp>
#include <ntt/ntt.cuh>
#include <util/all_gpus.cpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

// LDE_launch (spread + coset shift in one pass) is protected; LDE_aux uses
// it between host copies. This exposes it so the LDE runs on device data
// exactly as LDE_aux computes it.
struct PeerNTT : public NTT {
    using NTT::LDE_launch;
};

static const int REPS = 15;
static const uint64_t SAMPLES = 1u << 20;

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return (v[v.size() / 2] + v[(v.size() - 1) / 2]) / 2;
}

// Median over REPS of `run(streams)` bracketed by events: every stream
// waits for the start, stream 0 waits for every stream's end.
static float timed(const gpu_t& gpu, int nstreams, const std::function<void(int)>& run) {
    cudaEvent_t start, stop, done[3];
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    for (auto& e : done) CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    std::vector<float> ms;
    for (int r = 0; r < REPS + 1; r++) {
        CUDA_OK(cudaEventRecord(start, gpu[0]));
        for (int s = 1; s < nstreams; s++) CUDA_OK(cudaStreamWaitEvent(gpu[s], start, 0));
        run(nstreams);
        for (int s = 1; s < nstreams; s++) {
            CUDA_OK(cudaEventRecord(done[s], gpu[s]));
            CUDA_OK(cudaStreamWaitEvent(gpu[0], done[s], 0));
        }
        CUDA_OK(cudaEventRecord(stop, gpu[0]));
        CUDA_OK(cudaEventSynchronize(stop));
        float t;
        CUDA_OK(cudaEventElapsedTime(&t, start, stop));
        if (r > 0) ms.push_back(t);  // the first run warms up
    }
    return median(ms);
}

static void write_samples(const std::string& path, const fr_t* d, size_t total) {
    std::vector<uint64_t> host(total), out(SAMPLES);
    CUDA_OK(cudaMemcpy(host.data(), d, total * 8, cudaMemcpyDeviceToHost));
    // Reduced on the way out in case a value is held unreduced.
    for (uint64_t k = 0; k < SAMPLES; k++) out[k] = host[(k * 0x9E3779B97F4A7C15ull) % total] % gl64_t::MOD;
    std::ofstream(path, std::ios::binary).write((const char*)out.data(), SAMPLES * 8);
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: ntt_peer DIR PASS\n");
        return 2;
    }
    std::string dir = argv[1];
    int pass = atoi(argv[2]);
    std::ifstream in(dir + "/input.bin", std::ios::binary);
    uint64_t hdr[2];
    if (!in.read((char*)hdr, 16)) {
        fprintf(stderr, "error: cannot read %s/input.bin\n", dir.c_str());
        return 1;
    }
    const uint32_t lg = hdr[0];
    const size_t width = hdr[1], n = size_t(1) << lg;
    std::vector<uint64_t> input(width * n);
    in.read((char*)input.data(), input.size() * 8);

    const gpu_t& gpu = select_gpu(0);
    // gl64_t holds the plain value (no Montgomery form), so the u64s go
    // to the device as they are.
    static_assert(sizeof(fr_t) == 8, "Goldilocks elements are 8 bytes");
    std::ofstream times(dir + "/sppark_times_" + std::to_string(pass) + ".txt");
    auto report = [&](const std::string& key, float ms) {
        printf("sppark %-10s %8.3f ms\n", key.c_str(), ms);
        times << key << " " << ms << "\n";
    };

    // Forward NTT of every column, in place.
    {
        dev_ptr_t<fr_t> d{width * n};  // cudaMalloc: ordered before every stream
        auto load = [&] { CUDA_OK(cudaMemcpy(&d[0], input.data(), width * n * 8, cudaMemcpyHostToDevice)); };
        auto run = [&](int ns) {
            for (size_t c = 0; c < width; c++)
                NTT::Base_dev_ptr(gpu[c % ns], &d[c * n], lg, NTT::InputOutputOrder::NN, NTT::Direction::forward,
                                  NTT::Type::standard);
        };
        if (pass == 1) {
            load();
            run(1);
            gpu.sync();
            write_samples(dir + "/sppark_ntt.samples", &d[0], width * n);
        }
        // Timing transforms whatever the buffer holds: the cost does not
        // depend on the values.
        report("ntt_1", timed(gpu, 1, run));
        report("ntt_3", timed(gpu, 3, run));
    }

    // iNTT + coset LDE per column, sppark's LDE_aux on device data: the
    // input sits at the end of its column's output region (sppark's
    // layout, untimed), iNTT NR, spread with the shift g^i (g = 7) folded
    // in, forward NTT RN: natural order on 7 * H_(n << lg_blowup).
    for (uint32_t lg_blowup = 1; lg_blowup <= 3; lg_blowup++) {
        const size_t ext = n << lg_blowup;
        dev_ptr_t<fr_t> d{width * ext};
        auto load = [&] {
            CUDA_OK(cudaMemcpy2D(&d[ext - n], ext * 8, input.data(), n * 8, n * 8, width, cudaMemcpyHostToDevice));
        };
        const auto gen_powers = NTTParameters::all()[gpu.id()].partial_group_gen_powers;
        auto run = [&](int ns) {
            for (size_t c = 0; c < width; c++) {
                stream_t& s = gpu[c % ns];
                fr_t* out = &d[c * ext];
                fr_t* dom = out + ext - n;
                NTT::Base_dev_ptr(s, dom, lg, NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                                  NTT::Type::standard);
                PeerNTT::LDE_launch(s, out, dom, gen_powers, lg, lg_blowup);
                NTT::Base_dev_ptr(s, out, lg + lg_blowup, NTT::InputOutputOrder::RN, NTT::Direction::forward,
                                  NTT::Type::standard);
            }
        };
        if (pass == 1) {
            load();
            run(1);
            gpu.sync();
            write_samples(dir + "/sppark_lde" + std::to_string(1 << lg_blowup) + ".samples", &d[0], width * ext);
        }
        std::string key = "lde" + std::to_string(1 << lg_blowup);
        report(key + "_1", timed(gpu, 1, run));
        report(key + "_3", timed(gpu, 3, run));
    }
    return 0;
}

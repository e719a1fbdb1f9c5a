// Ground truth for a C++ program with exceptions, built -O2 -fomit-frame-pointer (g++): its FDEs carry
// personality and LSDA augmentations (zPLR). main -> driver -> level1 -> level2 -> hot_cpp; level2 owns
// RAII objects (cleanup landing pads) and every 64th call throws through level2 to level1's catch.
// The chain functions are extern "C" so their names are plain. Runs until killed, or for argv[1] s.
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

static volatile unsigned long sink;

struct Guard {
    std::vector<int> v;
    explicit Guard(int n) : v(n, 1) {}
    ~Guard() { sink += v.size(); }
};

extern "C" __attribute__((noinline)) void hot_cpp(int rounds) {
    unsigned long x = sink;
    for (int i = 0; i < rounds; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

extern "C" __attribute__((noinline)) void level2(int i) {
    Guard g(i & 15);
    hot_cpp(200000);
    if ((i & 63) == 63) throw std::runtime_error("every 64th call " + std::to_string(i));
    sink += g.v.size();
}

extern "C" __attribute__((noinline)) int level1(int i) {
    try {
        level2(i);
        return 0;
    } catch (const std::runtime_error &e) {
        return 1 + (int)(e.what()[0] & 1);
    }
}

extern "C" __attribute__((noinline)) void driver(double limit) {
    auto start = std::chrono::steady_clock::now();
    int caught = 0;
    for (int i = 0;; i++) {
        caught += level1(i);
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit) break;
    }
    sink += caught;
}

int main(int argc, char **argv) {
    driver(argc > 1 ? std::atof(argv[1]) : 1e18);
    return 0;
}

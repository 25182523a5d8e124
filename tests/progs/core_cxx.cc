/* SPDX-License-Identifier: MIT */
// core_cxx.cc — a C++ program for the preload tests: threads build batches
// of std::map<std::string, std::vector<int>>, hand them to whichever thread
// takes them next (so most are destroyed by another thread), and sum their
// contents. Output is deterministic for given arguments:
//   usable40=<malloc_usable_size(malloc(40))>   (64 under libsizeclass)
//   batches=<n> checksum=<sum>
// Usage: core_cxx [threads] [batches per thread].
#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Batch {
  std::map<std::string, std::vector<int>> entries;
  std::vector<std::string> words;
};

std::mutex queue_lock;
std::deque<std::unique_ptr<Batch>> queue;
std::atomic<uint64_t> checksum{0};
std::atomic<long> consumed{0};

std::unique_ptr<Batch> make_batch(int producer, int seq) {
  auto b = std::make_unique<Batch>();
  for (int i = 0; i < 40; i++) {
    // Long enough keys to leave the small-string buffer.
    std::string key = "producer-" + std::to_string(producer) + "-batch-" + std::to_string(seq) +
                      "-entry-" + std::to_string(i);
    std::vector<int> v;
    for (int k = 0; k < (i * 7 + seq) % 60; k++) v.push_back(k * producer + i);
    b->entries.emplace(std::move(key), std::move(v));
    b->words.push_back(std::string(static_cast<size_t>(1 + (i * 13 + seq) % 300), 'a' + i % 26));
  }
  return b;
}

uint64_t sum_batch(const Batch &b) {
  uint64_t s = 0;
  for (const auto &e : b.entries) {
    for (char c : e.first) s = s * 131 + static_cast<unsigned char>(c);
    for (int x : e.second) s += static_cast<uint64_t>(x) * 7;
  }
  for (const auto &w : b.words) s += w.size() * static_cast<unsigned char>(w[0]);
  return s;
}

void worker(int id, int batches, long total) {
  for (int seq = 0; seq < batches || consumed.load() < total;) {
    if (seq < batches) {
      auto b = make_batch(id, seq++);
      std::lock_guard<std::mutex> g(queue_lock);
      queue.push_back(std::move(b));
    }
    std::unique_ptr<Batch> mine;
    {
      std::lock_guard<std::mutex> g(queue_lock);
      if (!queue.empty()) {
        mine = std::move(queue.front());
        queue.pop_front();
      }
    }
    if (mine) {
      // Order-independent: the sum of per-batch sums.
      checksum += sum_batch(*mine);
      consumed++;
    } else if (seq >= batches) {
      std::this_thread::yield();
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  int batches = argc > 2 ? std::atoi(argv[2]) : 300;
  void *probe = std::malloc(40);
  std::printf("usable40=%zu\n", malloc_usable_size(probe));
  std::free(probe);
  long total = static_cast<long>(threads) * batches;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; i++) pool.emplace_back(worker, i, batches, total);
  for (auto &t : pool) t.join();
  std::printf("batches=%ld checksum=%llu\n", consumed.load(),
              static_cast<unsigned long long>(checksum.load()));
  return consumed.load() == total ? 0 : 1;
}

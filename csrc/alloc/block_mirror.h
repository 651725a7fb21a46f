// A mirror of the CUDA caching allocator's block bookkeeping, fed its trace, so that each
// allocation is booked at the size of the block the allocator hands out: what torch's
// allocated_bytes (torch.cuda.max_memory_allocated) adds, not the requested size the ALLOC
// entry carries. The difference is the rounding (to 512 bytes) and, in the large pool, the
// remainder of a free block the allocator does not split (up to 1 MiB per allocation): bytes
// no one else can use until the tensor lets go of them.
//
// Mirrored for the default configuration (torch's CUDACachingAllocator.cpp):
//  - round_size(n) = max(512, 512 * ceil(n / 512)); requests up to 1 MiB go to the small pool.
//  - A segment (SEGMENT_ALLOC) starts as one free range. The allocator always hands out the
//    start of a free block: ALLOC(addr, n) finds the free range [addr, addr + S); it splits
//    off size = round_size(n) when the remainder S - size is at least 512 (small pool) or
//    more than 1 MiB (large pool), else the whole S becomes the block.
//  - FREE_COMPLETED returns the block to the free ranges, merged with free neighbours of the
//    same segment only (a block freed with FREE_REQUESTED and waiting for its stream events
//    is neither free nor mergeable until then). SEGMENT_FREE drops the segment.
//  - Expandable segments (SEGMENT_MAP / SEGMENT_UNMAP): the allocator splits every block
//    there (the remainder is 0 or at least 512), so a block in a mapped range is
//    round_size(n) exactly; no free ranges are kept for them.
// Anything else (an ALLOC with no free range at its address nor in a mapped range: a
// configuration the mirror does not model, or a lost event) is booked at round_size(n) and
// counted as a fallback.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace visprof {

// torch's constants of the same names. The segment sizes (kSmallBuffer, kLargeBuffer, ...)
// are not needed: each segment's size comes with its SEGMENT_ALLOC.
constexpr uint64_t kMinBlockSize = 512;      // every block is a multiple of this
constexpr uint64_t kSmallSize = 1ull << 20;  // requests up to this go to the small pool

uint64_t round_block_size(uint64_t requested);

struct MirrorCounts {
  uint64_t split_rules = 0;  // placed in a free range by the split rules
  uint64_t seeded = 0;       // sizes taken from a memory snapshot
  uint64_t expandable = 0;   // in an expandable segment's mapped range
  uint64_t fallbacks = 0;    // no free range at the address: booked at round_size
};

class BlockMirror {
 public:
  static BlockMirror& instance();

  void add_segment(uint64_t addr, uint64_t size, int device);
  void remove_segment(uint64_t addr, uint64_t size, int device);
  void map(uint64_t addr, uint64_t size, int device);
  void unmap(uint64_t addr, uint64_t size, int device);
  // A block a snapshot shows (allocated, or freed and waiting for its stream events): carved
  // out of the free ranges at exactly `size`, and the next ALLOC at `addr` gets that size.
  void seed_block(uint64_t addr, uint64_t size, int device);
  // Returns the block size to book for an ALLOC of `requested` bytes at `addr`.
  uint64_t allocate(uint64_t addr, uint64_t requested, int device);
  // FREE_COMPLETED: the block becomes free again.
  void release(uint64_t addr, int device);

  MirrorCounts counts(int device) const;
  void clear();

 private:
  struct Block {
    uint64_t size;
    bool tracked;        // returns to the free ranges when released
    bool awaiting_alloc; // seeded: the next ALLOC at this address takes `size`
  };
  struct Device {
    std::map<uint64_t, uint64_t> segments;  // base -> size
    std::map<uint64_t, uint64_t> free;      // start -> size; never spans two segments
    std::map<uint64_t, uint64_t> mapped;    // expandable segments' mapped ranges, merged
    std::unordered_map<uint64_t, Block> blocks;  // allocated, or freed and not yet completed
    MirrorCounts counts;
  };
  // Removes [start, end) from a range map, keeping what lies outside it.
  static void erase_range(std::map<uint64_t, uint64_t>& ranges, uint64_t start, uint64_t end);
  static bool contains(const std::map<uint64_t, uint64_t>& ranges, uint64_t addr);

  mutable std::mutex mutex_;
  std::unordered_map<int, Device> devices_;
};

}  // namespace visprof

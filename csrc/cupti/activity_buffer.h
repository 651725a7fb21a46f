// A CUPTI activity buffer: move-only, freed on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>

namespace visprof {

class ActivityBuffer {
 public:
  // CUPTI requires 8-byte alignment; 8 MiB holds ~40k kernel records, so a model forward
  // fills a handful of buffers rather than thousands.
  static constexpr size_t kAlignment = 8;
  static constexpr size_t kDefaultSize = 8u << 20;

  ActivityBuffer() = default;
  static ActivityBuffer allocate(size_t size = kDefaultSize) {
    return ActivityBuffer(static_cast<uint8_t*>(std::aligned_alloc(kAlignment, size)), size, 0);
  }
  // Takes back a buffer that CUPTI filled (it was handed out by allocate()).
  static ActivityBuffer adopt(uint8_t* data, size_t size, size_t valid) {
    return ActivityBuffer(data, size, valid);
  }
  ActivityBuffer(const ActivityBuffer&) = delete;
  ActivityBuffer& operator=(const ActivityBuffer&) = delete;
  ActivityBuffer(ActivityBuffer&& other) noexcept { *this = std::move(other); }
  ActivityBuffer& operator=(ActivityBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      valid_ = std::exchange(other.valid_, 0);
    }
    return *this;
  }
  ~ActivityBuffer() { std::free(data_); }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t valid() const { return valid_; }
  // Hands the memory to CUPTI, which gives it back through adopt().
  uint8_t* release() { return std::exchange(data_, nullptr); }

 private:
  ActivityBuffer(uint8_t* data, size_t size, size_t valid) : data_(data), size_(size), valid_(valid) {}
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t valid_ = 0;
};

}  // namespace visprof

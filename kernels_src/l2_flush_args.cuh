// Arguments of the L2 eviction kernel; shared by host C++ and NVRTC.
#pragma once

namespace chord {

struct L2FlushArgs {
  const void* buffer;   // 16-byte aligned, `count` 16-byte words, all zero
  void* sink;           // written only if the words' xor equals `never` (it cannot: they are zero)
  long long count;
  unsigned int never;
  int pad_;
};

}  // namespace chord

// libFuzzer entry of one harness, chosen at compile time by STEPSIM_FUZZ_HARNESS.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  stepsim::fuzz::STEPSIM_FUZZ_HARNESS(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}

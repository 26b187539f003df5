#pragma once
// Random JSON Schemas over the supported keywords, for the validation test.
#include <cstdint>
#include <random>

#include <nlohmann/json.hpp>

namespace vks::test {

nlohmann::json random_schema(std::mt19937& rng, int depth = 0);

}  // namespace vks::test

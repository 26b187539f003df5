#pragma once
// std::visit over a variant with one lambda per alternative: std::visit(Overloaded{f, g}, v).

namespace vks::proto::detail {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace vks::proto::detail

#pragma once
// A request or answer body through the wire and back: encoded, parsed as the server (requests) or
// a client (answers) parses it, and checked to come back as the type and tag sent.
#include <gtest/gtest.h>

#include <type_traits>
#include <variant>

#include "protocol/requests.h"
#include "protocol/responses.h"

namespace vks::test {

template <class T>
T request_roundtrip(const T& body, const proto::Tag& tag = proto::Tag::of("t-1"),
                    const proto::ProtocolLimits& limits = {}) {
  proto::Result<proto::Request> r = proto::parse_request(proto::encode_request(proto::RequestBody(body), tag), limits);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message + " field " + r.error().field);
  if (!r.ok() || !std::holds_alternative<T>(r->body)) {
    ADD_FAILURE() << "not the request type sent";
    return T{};
  }
  EXPECT_EQ(r->tag, tag);
  return std::get<T>(r->body);
}

// A stream event carries no tag: only the other answers' tags are checked.
template <class T>
T answer_roundtrip(const T& body, const proto::Tag& tag = proto::Tag::of(12)) {
  proto::Result<proto::ServerMessage> m =
      proto::parse_server_message(proto::encode_answer(proto::AnswerBody(body), tag));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message + " field " + m.error().field);
  if (!m.ok() || !std::holds_alternative<T>(m->body)) {
    ADD_FAILURE() << "not the answer type sent";
    return T{};
  }
  if constexpr (!std::is_same_v<T, proto::StreamEvent>) {
    EXPECT_EQ(m->tag, tag);
  }
  return std::get<T>(m->body);
}

}  // namespace vks::test

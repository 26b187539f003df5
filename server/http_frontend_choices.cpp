// HttpFrontend: OpenAI's n > 1 (server/http/choice_group.h). Every choice is submitted through
// HttpFrontend::submit, like any request: choice 0 at once, the others once choice 0 has its first
// token (on_event calls submit_later_choices), when its prompt's KV blocks are in the prefix cache;
// a chat is rendered and tokenized once, for choice 0, and the others take its prompt ids.
// Their events come back one request at a time; the answer is put together here.
#include "server/http/cors.h"
#include "server/http/json_text.h"
#include "server/http/openai_api.h"
#include "server/http/openai_chat.h"
#include "server/http_frontend.h"

namespace vks::server {

using nlohmann::json;
using http::ApiError;
using http::HttpConnection;

void HttpFrontend::submit_choices(HttpConnection& c, const std::string& client_id, http::Generation g, json wire,
                                  const std::map<std::string, std::string>& names, int32_t n) {
  if (n > 1) {
    auto group = std::make_shared<http::ChoiceGroup>();
    group->n = n;
    group->later = g;
    group->later.cors_origin = cors_origin_;  // submit stamps the origin of the request being answered
    group->later_wire = wire;
    group->names = &names;
    g.group = std::move(group);
  }
  submit(c, client_id, std::move(g), std::move(wire), names);
}

void HttpFrontend::submit_later_choices(const std::shared_ptr<http::ChoiceGroup>& group) {
  for (int32_t i = 1; i < group->n; ++i) {
    HttpConnection* c = live(group->conn_id, group->exchange);
    if (c == nullptr || group->failed) return;  // gone or failed: nothing more to answer
    http::Generation g = group->later;
    g.group = group;
    g.choice = i;
    cors_origin_ = g.cors_origin;
    // No x-request-id of the client's: that id is choice 0's (the answer's); these get fresh ones.
    submit(*c, {}, std::move(g), http::choice_wire(group->later_wire, i), *group->names, group->rendered);
  }
}

void HttpFrontend::finish_choice(HttpConnection& c, http::Generation& g, const proto::StreamEvent& ev) {
  const std::shared_ptr<http::ChoiceGroup> group = g.group;
  cors_origin_ = g.cors_origin;
  if (ev.reason == proto::FinishReason::kError) {
    const std::string message = g.error_message.empty() ? "generation failed" : g.error_message;
    return fail_choices(c, group, g.stream,
                        ApiError{500, "choice " + std::to_string(g.choice) + ": " + message, "generation_failed", {}, 0});
  }
  const bool chat = g.api == http::Api::kOpenAiChat;
  if (g.stream) {
    c.send_chunk(chat ? http::openai_chat_choice_end_chunks(g, ev) : http::openai_choice_end_chunk(g, ev));
    http::add_finished_choice(*group, g.choice, chat ? http::openai_chat_usage(g, ev) : http::openai_usage(ev, g.prompt_tokens));
  } else {
    json one = chat ? http::openai_chat_completion(g, ev) : http::openai_completion(g, ev);
    json usage = one["usage"];
    http::add_finished_choice(*group, g.choice, std::move(usage), std::move(one));
  }
  if (!http::all_choices_finished(*group)) return;
  if (g.stream) {
    c.send_chunk(http::openai_answer_end_chunks(g, http::group_usage(*group)));
    c.end_stream();
    return;
  }
  http::HttpResponse resp;
  resp.headers.emplace_back("x-request-id", group->answer_id);
  http::add_cors_headers(resp.headers, g.cors_origin);
  resp.body = http::compact_dump(http::group_answer(*group));
  c.respond(resp);
}

void HttpFrontend::fail_choices(HttpConnection& c, const std::shared_ptr<http::ChoiceGroup>& group, bool stream,
                                const ApiError& error) {
  group->failed = true;
  for (auto it = generations_.begin(); it != generations_.end();) {
    it = it->second.group == group ? generations_.erase(it) : std::next(it);
  }
  if (stream) {
    c.send_chunk(http::openai_failed_stream_end(error.message));
    c.end_stream();
  } else {
    send_error(c, /*ollama=*/false, error, group->answer_id.empty() ? fresh_request_id() : group->answer_id);
  }
  c.close_after_flush();
}

}  // namespace vks::server

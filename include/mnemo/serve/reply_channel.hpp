// A request_sink that hands the reply to another thread (an HTTP handler): the
// scheduler's thread pushes text and the end; the reader takes what arrived, waiting
// up to a timeout, so it can check its client in between.
//
//   auto ch = std::make_shared<reply_channel>();
//   req.sink = ch;
//   while (true) {
//     reply_channel::batch got = ch->take(50ms);
//     write(got.text);
//     if (got.done) break;
//     if (client_gone) req.cancelled->store(true);
//   }
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>

#include "mnemo/base/status.hpp"
#include "mnemo/serve/request.hpp"

namespace mnemo::serve {

class reply_channel final : public request_sink {
 public:
  struct batch {
    std::string text;  // arrived since the last take()
    bool done = false;
    finish_reason why = finish_reason::error;
    usage u;
    status error;
  };

  void on_text(std::string_view piece) override {
    {
      std::lock_guard lock(mu_);
      pending_.append(piece);
    }
    cv_.notify_all();
  }
  void on_done(finish_reason why, const usage& u, const status& error) override {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      why_ = why;
      u_ = u;
      error_ = error;
    }
    cv_.notify_all();
  }

  /// What arrived, waiting up to `timeout` when nothing has.
  batch take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return done_ || !pending_.empty(); });
    batch b;
    b.text.swap(pending_);
    b.done = done_;
    b.why = why_;
    b.u = u_;
    b.error = error_;
    return b;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool done_ = false;
  finish_reason why_ = finish_reason::error;
  usage u_;
  status error_;
};

}  // namespace mnemo::serve

// The speculation controller (draft_length.h) on made-up step costs: it drafts where a wider step
// is nearly free, not where a drafted token costs as much as a decode step, the length that pays
// most on a CPU-like cost curve (long for drafts right or wrong as a whole, short for runs that
// break), and it learns acceptance from drafts it did not verify.
#include "engine/sched/draft_length.h"

#include <gtest/gtest.h>

#include <vector>

namespace vks::sched {
namespace {

StepCost costs(const std::vector<double>& ms_by_width) {  // [0] is a 1-token step's
  StepCost c;
  for (size_t i = 0; i < ms_by_width.size(); ++i) c.record(static_cast<int32_t>(i + 1), ms_by_width[i]);
  return c;
}

// Rounds of `right` verified drafts of 8 right to their end, then `wrong` drafts wrong from their
// first token: acceptance all or nothing, as prompt lookup's inside and outside a repeat.
DraftLength whole_drafts(int32_t right, int32_t wrong) {
  DraftLength d(8);
  for (int32_t i = 0; i < 40; ++i) {
    for (int32_t r = 0; r < right; ++r) d.on_verified(8, 8);
    for (int32_t w = 0; w < wrong; ++w) d.on_verified(8, 0);
  }
  return d;
}

// Verified drafts of 8 whose first `accepted` tokens are right: runs that break midway.
DraftLength broken_runs(int32_t accepted) {
  DraftLength d(8);
  for (int32_t i = 0; i < 40; ++i) d.on_verified(8, accepted);
  return d;
}

TEST(StepCost, LeastRecentTimeAndOptimisticUnmeasuredWidths) {
  StepCost c;
  EXPECT_EQ(c.estimate(1), 0);  // unknown
  c.record(1, 100);
  EXPECT_DOUBLE_EQ(c.estimate(1), 100);
  EXPECT_DOUBLE_EQ(c.estimate(3), 100 * (1 + 2 * StepCost::kProbeSlope));
  c.record(4, 400);  // measured above: the interpolation if it is lower
  EXPECT_DOUBLE_EQ(c.estimate(3), 100 * (1 + 2 * StepCost::kProbeSlope));
  EXPECT_DOUBLE_EQ(c.estimate(2), 150);
  StepCost cheap;
  cheap.record(1, 100);
  cheap.record(4, 110);
  EXPECT_DOUBLE_EQ(cheap.estimate(3), 100 + 10 * 2.0 / 3.0);
  // A stretched step (another process had the cores) does not raise the estimate...
  c.record(1, 300);
  EXPECT_DOUBLE_EQ(c.estimate(1), 100);
  // ...and is forgotten after kSamples newer ones.
  for (int32_t i = 0; i < StepCost::kSamples; ++i) c.record(1, 120);
  EXPECT_DOUBLE_EQ(c.estimate(1), 120);
  // A width unmeasured for kStaleSteps is stale: its estimate halves every kHalfLife steps, down to
  // the optimistic extrapolation, so it is tried again (soon if it nearly paid).
  StepCost s;
  s.record(1, 100);
  s.record(4, 1000);
  for (int32_t i = 0; i < StepCost::kStaleSteps; ++i) s.record(1, 100);
  EXPECT_TRUE(s.measured(4));
  s.record(1, 100);
  EXPECT_FALSE(s.measured(4));
  EXPECT_NEAR(s.estimate(4), 1000, 5);
  for (int32_t i = 0; i < StepCost::kHalfLife; ++i) s.record(1, 100);
  EXPECT_NEAR(s.estimate(4), 500, 5);
  for (int32_t i = 0; i < 4 * StepCost::kHalfLife; ++i) s.record(1, 100);
  EXPECT_DOUBLE_EQ(s.estimate(4), 100 * (1 + 3 * StepCost::kProbeSlope));
  s.record(4, 300);  // its old sample is not kept
  EXPECT_DOUBLE_EQ(s.estimate(4), 300);
  // With two widths measured, the next ones cost what those say a token costs (here 5 ms), not the
  // guess of half a decode step: the CPU's VNNI tiles make a 4-token step 1.4 decode steps.
  StepCost slope;
  slope.record(1, 100);
  slope.record(3, 110);
  EXPECT_DOUBLE_EQ(slope.estimate(4), 115);
  EXPECT_DOUBLE_EQ(slope.estimate(2), 105);  // between measured widths: interpolated
  slope.record(2, 130);                       // noise: the slope from the narrowest measured
  EXPECT_DOUBLE_EQ(slope.estimate(5), 120);
  StepCost steep;  // the CPU's AVX2 tiles: a 2-token step 2.2 decode steps
  steep.record(1, 100);
  steep.record(2, 220);
  EXPECT_DOUBLE_EQ(steep.estimate(3), 340);
  c.record(0, 5);
  c.record(StepCost::kMaxTokens + 1, 5);
  EXPECT_FALSE(c.measured(0));
}

TEST(ChooseDraft, DraftsOnlyWhereItPays) {
  const DraftLength good = whole_drafts(9, 1);
  const DraftLength poor = whole_drafts(1, 4);
  const DraftLength broken = broken_runs(2);
  EXPECT_GT(good.first_acceptance(), 0.75);  // ~0.79: its latest draft was wrong
  EXPECT_GT(good.run_acceptance(), 0.95);
  EXPECT_LT(poor.first_acceptance(), 0.25);
  EXPECT_GT(broken.first_acceptance(), 0.9);
  EXPECT_NEAR(broken.run_acceptance(), 0.5, 0.05);
  // Bandwidth-bound (a GPU): 8 more tokens cost 16% more.
  const StepCost flat = costs({100, 102, 104, 106, 108, 110, 112, 114, 116});
  EXPECT_EQ(choose_draft(flat, good, 1, 1, 8), 8);
  EXPECT_EQ(choose_draft(flat, good, 1, 1, 3), 3);  // no more than was proposed
  // Nearly free: a draft rarely right pays too, in full when it is right to its end.
  EXPECT_EQ(choose_draft(flat, poor, 1, 1, 8), 8);
  // Compute-bound, every token a decode step's cost: nothing pays.
  const StepCost linear = costs({100, 200, 300, 400, 500, 600, 700, 800, 900});
  EXPECT_EQ(choose_draft(linear, good, 1, 1, 8), 0);
  // This project's CPU backend on TinyLlama Q4_0 before the VNNI tiles: 4-token kernel tiles.
  const StepCost cpu = costs({100, 142, 160, 156, 225, 246, 321, 375, 486});
  EXPECT_EQ(choose_draft(cpu, good, 1, 1, 8), 3);
  EXPECT_EQ(choose_draft(cpu, poor, 1, 1, 8), 0);
  // A request none of whose drafts was ever right bets nothing on the prior (a1 = 0.5 would pay on
  // nearly free widths); one right draft makes it learn from verified drafts too.
  DraftLength fresh(8);
  EXPECT_EQ(choose_draft(flat, fresh, 1, 1, 8), 0);
  fresh.on_verified(8, 0);
  EXPECT_EQ(choose_draft(flat, fresh, 1, 1, 8), 0);
  fresh.set_shadow(std::vector<int32_t>{4, 5});
  fresh.on_emitted(4);
  EXPECT_GT(choose_draft(flat, fresh, 1, 1, 8), 0);
  // Unknown plain cost (the first steps): measure it first.
  EXPECT_EQ(choose_draft(StepCost{}, good, 1, 1, 8), 0);
  // Unmeasured widths are probed one token past the widest measured one.
  StepCost only_plain;
  only_plain.record(1, 100);
  EXPECT_EQ(choose_draft(only_plain, good, 1, 1, 8), 1);
  only_plain.record(2, 101);
  EXPECT_EQ(choose_draft(only_plain, good, 1, 1, 8), 2);
  StepCost probed_expensive;
  probed_expensive.record(1, 100);
  probed_expensive.record(2, 220);  // the CPU's 2-token step without the tile fix
  EXPECT_EQ(choose_draft(probed_expensive, good, 1, 1, 8), 0);
  // Widths measured long ago (plain steps since) are drafted to at once, not probed again one by one.
  StepCost stale = costs({100, 114, 128, 138, 150, 154});
  for (int32_t i = 0; i < 4 * StepCost::kStaleSteps; ++i) stale.record(1, 100);
  EXPECT_FALSE(stale.measured(6));
  EXPECT_GE(choose_draft(stale, good, 1, 1, 6), 5);
  // In a step of 4 decoding requests, 3 drafted tokens ride on a 4-token step's cost.
  EXPECT_EQ(choose_draft(cpu, good, 4, 4, 8), 0);
}

TEST(ChooseDraft, DraftsRightOrWrongAsAWholeAreDraftedLong) {
  // The CPU backend with its VNNI tiles (bench --step-profile): a 6-token step costs 1.54 decode
  // steps. Drafts right to their end 3 times in 5 pay most at 6 tokens and more: the tokens of a
  // right draft after its first are all but certain. Runs that break after 2 tokens (as likely
  // right at first) pay only a short draft.
  const StepCost cpu = costs({100, 114, 128, 138, 150, 154, 185, 192, 218});
  EXPECT_GE(choose_draft(cpu, whole_drafts(3, 2), 1, 1, 8), 5);
  EXPECT_LE(choose_draft(cpu, broken_runs(2), 1, 1, 8), 3);
  // One rate per token, as a draft of 8 right in 3 of 5 and wrong from its first token otherwise
  // shows it (24 of 26 tokens tried right), would draft long too; drafts 60% right token by token
  // in short runs would not: the chain tells them apart.
  const DraftLength d = whole_drafts(3, 2);
  EXPECT_NEAR(d.expected_extra(6) / d.expected_extra(1), 6, 0.5);
  const DraftLength b = broken_runs(2);
  EXPECT_LT(b.expected_extra(6) / b.expected_extra(1), 2.2);
}

TEST(ChooseDraft, ADraftModelsStepsCountBeforeDrafting) {
  const DraftLength good = whole_drafts(9, 1);
  const DraftLength broken = broken_runs(2);
  const StepCost flat = costs({100, 102, 104, 106, 108, 110, 112, 114, 116});
  // Free drafting (prompt lookup) drafts all 8; a draft token costing half a target step pays for a
  // short draft only when runs break early; one costing a whole target step never pays.
  EXPECT_EQ(choose_draft(flat, good, 1, 1, 8, 0), 8);
  const int32_t half = choose_draft(flat, broken, 1, 1, 8, 50);
  EXPECT_GE(half, 1);
  EXPECT_LE(half, 3);
  EXPECT_EQ(choose_draft(flat, broken, 1, 1, 8, 100), 0);
  // Another request of the step already drafts 4: those draft steps are paid, so this one's draft
  // up to 4 tokens costs only its verification.
  EXPECT_EQ(choose_draft(flat, good, 5, 5 + good.expected_extra(4), 4, 100, 4), 4);
}

TEST(DraftLength, ProbesCostTheirBudgetShareOfPlainDecoding) {
  DraftLength d(4);
  int32_t probes = 0;
  for (int32_t i = 0; i < 1000; ++i) probes += d.probe_due(/*probe_ms=*/30, /*step_ms=*/10) ? 1 : 0;
  // 30 ms probes may take kProbeBudget (3%) of 10 ms steps: one per 100 steps.
  EXPECT_EQ(probes, static_cast<int32_t>(1000 * 10 * DraftLength::kProbeBudget / 30));
  int32_t free_probes = 0;
  for (int32_t i = 0; i < 10; ++i) free_probes += d.probe_due(0, 10) ? 1 : 0;
  EXPECT_EQ(free_probes, 10);  // prompt lookup: every step
}

// The engine's record of a draft model over finished requests, and where new requests start: the
// record's acceptance, weighing at most kPriorWeight observations of each kind.
TEST(DraftLength, NewRequestsStartFromTheDraftersRecord) {
  DraftLength good(4), bad(4);
  for (int32_t i = 0; i < 6; ++i) {
    good.on_verified(4, 4);
    bad.on_verified(4, 0);
  }
  DraftLength record(4);
  DraftLength fresh(4);
  fresh.start_from(record);
  EXPECT_FALSE(fresh.seen_hit()) << "an empty record is no evidence";
  EXPECT_DOUBLE_EQ(fresh.first_acceptance(), 0.5);
  record.merge(good);
  record.merge(good);
  DraftLength after_good(4);
  after_good.start_from(record);
  EXPECT_TRUE(after_good.seen_hit());
  // All first tokens right, at most kPriorWeight of them: (2 + 1) / (2 + 2).
  EXPECT_DOUBLE_EQ(after_good.first_acceptance(), (DraftLength::kPriorWeight + 1) / (DraftLength::kPriorWeight + 2));
  EXPECT_EQ(after_good.drafted(), 0) << "the record's counts are not the request's drafts";
  // The request's own misses soon outweigh the prior.
  after_good.on_verified(4, 0);
  after_good.on_verified(4, 0);
  after_good.on_verified(4, 0);
  EXPECT_LT(after_good.first_acceptance(), 0.5);
  // Older requests count half per request: after bad ones the record says bad.
  for (int32_t i = 0; i < 4; ++i) record.merge(bad);
  DraftLength after_bad(4);
  after_bad.start_from(record);
  EXPECT_LT(after_bad.first_acceptance(), 0.35);
}

TEST(DraftLength, LearnsAcceptanceFromShadowDrafts) {
  DraftLength d(4);
  EXPECT_DOUBLE_EQ(d.first_acceptance(), 0.5);  // the priors
  EXPECT_DOUBLE_EQ(d.run_acceptance(), 0.5);
  EXPECT_DOUBLE_EQ(d.expected_extra(2), 0.5 + 0.25);
  const std::vector<int32_t> draft = {5, 6, 7};
  d.set_shadow(draft);
  d.set_shadow(std::vector<int32_t>{9});  // one at a time
  d.on_emitted(5);  // known at once: the first token was right
  EXPECT_TRUE(d.has_shadow());
  EXPECT_DOUBLE_EQ(d.first_acceptance(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(d.run_acceptance(), 0.5);
  d.on_emitted(6);
  EXPECT_DOUBLE_EQ(d.run_acceptance(), 2.0 / 3.0);
  d.on_emitted(8);  // the third was wrong: the first right, then 1 right and 1 wrong after it
  EXPECT_FALSE(d.has_shadow());
  EXPECT_DOUBLE_EQ(d.first_acceptance(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(d.run_acceptance(), 2.0 / 4.0);
  d.set_shadow(draft);
  for (int32_t id : draft) d.on_emitted(id);  // all right: no miss
  EXPECT_FALSE(d.has_shadow());
  constexpr double kD = DraftLength::kDecay;
  EXPECT_NEAR(d.first_acceptance(), (kD + 1 + 1) / (kD + 1 + 2), 1e-12);
  EXPECT_NEAR(d.run_acceptance(), (kD + 2 + 1) / (kD + 2 + kD + 2), 1e-12);
  d.set_shadow(draft);
  d.on_emitted(4);  // wrong from its first token: a first miss, nothing about runs
  EXPECT_NEAR(d.first_acceptance(), (kD * kD + kD + 1) / (kD * kD + kD + 1 + 2), 1e-12);
  EXPECT_NEAR(d.run_acceptance(), (kD * (kD + 2) + 1) / (kD * (kD + 2) + kD * kD + 2), 1e-12);
  EXPECT_EQ(d.drafted(), 0);  // shadows are not drafts in the timings
  d.on_verified(4, 2);
  EXPECT_EQ(d.drafted(), 4);
  EXPECT_EQ(d.accepted(), 2);
}

}  // namespace
}  // namespace vks::sched

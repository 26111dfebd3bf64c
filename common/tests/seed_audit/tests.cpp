// The tests of the miniature lab: one question asked of seeded inputs, one only of a fixed list a table
// could hold, a yes/no question over seeded inputs (few answers, new order), and one never asked.
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

namespace lab99 {
double seeded_question(double x);
double fixed_question(int n);
bool is_big(double x);
double never_asked();
}  // namespace lab99

using rooflab::grading::near;

TEST(Lab99, Questions) {
  rooflab::Rng rng(rooflab::test_seed());
  for (int i = 0; i < 10; ++i) {
    const double x = rng.uniform();
    EXPECT_TRUE(near(lab99::seeded_question(x), 3 * x, {0, 1e-12}));
    EXPECT_TRUE(near(lab99::is_big(x) ? 1 : 0, x > 0.5 ? 1 : 0, {0, 0}));
  }
  for (int n : {1, 2, 3}) EXPECT_TRUE(near(lab99::fixed_question(n), n * 0.5, {0, 1e-12}));
}

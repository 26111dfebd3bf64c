// A lab's answers in miniature, for the seed audit's own test: four questions, compiled with
// -finstrument-functions as a lab's reference answers are.
#include <cmath>

namespace lab99 {

double seeded_question(double x) { return 3 * x; }
double fixed_question(int n) { return n * 0.5; }
bool is_big(double x) { return x > 0.5; }
double never_asked() { return 1; }

}  // namespace lab99

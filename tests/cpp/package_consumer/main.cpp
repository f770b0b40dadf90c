#include <bronze/bronze.hpp>

#include <iostream>

int main() {
  bronze::Tensor t = bronze::full({4}, 3.0f);
  double sum = 0;
  for (double v : t.to_double_vector()) sum += v;
  std::cout << "sum=" << sum << "\n";
  return sum == 12 ? 0 : 1;
}

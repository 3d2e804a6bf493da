#include "sluice/pipeline/element.h"

namespace sluice::pipeline {

int Schema::Find(std::string_view name) const {
  for (size_t i = 0; i < features_.size(); ++i) {
    if (features_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Result<size_t> Schema::Index(std::string_view name) const {
  int i = Find(name);
  if (i < 0) return NotFound("no feature '" + std::string(name) + "' in " + ToString());
  return static_cast<size_t>(i);
}

std::string Schema::ToString() const {
  std::string s = "{";
  for (size_t i = 0; i < features_.size(); ++i) {
    if (i) s += ", ";
    s += features_[i].name + ": " + std::string(DTypeName(features_[i].dtype)) +
         features_[i].shape.ToString();
  }
  return s + "}";
}

}  // namespace sluice::pipeline

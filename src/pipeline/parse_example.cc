// parse_example: placeholder until ExampleParser (branch `example`) lands on main.
#include "nodes.h"

namespace sluice::pipeline {

Result<NodePtr> MakeParseExampleNode(NodePtr, std::vector<FeatureSpec>,
                                     const ParseExampleOptions&) {
  return Unimplemented("parse_example: needs ExampleParser");
}

}  // namespace sluice::pipeline

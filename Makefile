# One line per target; the work is in scripts/.
.PHONY: build image control-plane kind-node-image run test bench clean

build:          ## build bin/kb-bench with the version stamped in
	@scripts/build.sh

image:          ## build the kb-bench container image as bin/kb-bench-image.tar (no Docker or registry needed)
	@scripts/image.sh

control-plane:  ## build kube-apiserver and etcd from pinned source into ~/.cache/kb-bench (once)
	@scripts/control-plane.sh >/dev/null

kind-node-image: ## build the offline kind node image from the pins (no registry; root, Docker; once) and print its reference
	@scripts/kind-node-image.sh

run: build control-plane  ## run the default benchmark on a real local control plane
	@scripts/run.sh

test:           ## gofmt, vet, unit tests with -race, integration tests on the real control plane, fuzz
	@scripts/test.sh

bench:          ## go test benchmarks (engine overhead, recorder cost)
	@scripts/bench.sh

clean:          ## remove build outputs (not the control-plane cache)
	@rm -rf bin

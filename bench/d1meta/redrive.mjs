// redrive's own entry module (build/worker.mjs: run `make build` first)
// with its D1 binding metered (see meter.mjs); for `make bench` only.
import redrive from "../../build/worker.mjs";
import { withMeter } from "./meter.mjs";

export default withMeter(redrive);

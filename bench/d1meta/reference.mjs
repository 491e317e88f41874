// The original TypeScript worker (bench/reference) with its D1 binding
// metered (see meter.mjs); for `make bench` only.
import reference from "../reference/src/index.ts";
import { withMeter } from "./meter.mjs";

export default withMeter(reference);

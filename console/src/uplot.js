// uPlot and its stylesheet (text), loaded (a chunk of its own) only by a
// page that draws a chart.
export { default as uPlot } from "uplot";
export { default as css } from "uplot/dist/uPlot.min.css";

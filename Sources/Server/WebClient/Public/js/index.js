// The home page: choose what to do; sign in or up.
import { startSession } from "./ui.js";

startSession();

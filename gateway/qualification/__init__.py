"""Qualification: when may this gateway's model write a green answer? (`manualqa doctor` and what follows.)

- `gates.py`: doctor's gates on a deployment profile (2: the intended backend does the work; 3: the
  rollback profile passes gate 1; 4 handed in) and `run_doctor`, which runs them in order. It, `load_gate.py`
  and `verdicts.py` need only each other and runtimes/.
- `load_gate.py`: gate 1, the artifact loads on the locked runtime and answers a smoke prompt.
- `verdicts.py`: a gate's verdict (`GateResult`) and the responsibility record (`DoctorReport`).
- `answers_gate.py`: gate 4, "answers": a replay of a gold question set held to the profile's bar.
- `doctor.py`: `run_and_record`, what `manualqa doctor` and the admin page run: the gates, then the
  verdict kept (the files under data/doctor/ are written and read by gateway.records.deployments).
- `answer_mode.py`: the answer mode that follows: generate only for a profile that passed gate 4
  (under answer.mode = "auto"), and why a model's text is otherwise only a draft.
"""

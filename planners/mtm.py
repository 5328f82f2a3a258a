"""placeholder"""
from planners.ssm import SSMPlanner as MTMPlanner
